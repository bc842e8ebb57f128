import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyPassword } from "../../app/.server/accounts/password.ts";
import { sql } from "../../app/.server/db/sql.ts";
import { runAccountCommand } from "../../scripts/lib/account-commands.ts";
import { rowOf } from "../helpers/databases.ts";
import { holdFreePort, startNginx, type Nginx } from "../helpers/nginx.ts";
import { startRelayStandIn, type RelayStandIn } from "../helpers/relay-stand-in.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { makeTestCertificates, type TestCertificates } from "../helpers/tls.ts";

/**
 * The reference PDS's pdsadmin scripts (tests/fixtures/pdsadmin, byte for byte), run unmodified against Atrium as an
 * operator runs them (docs/decisions/0051): bash, curl and jq over https://$PDS_HOSTNAME, here a real nginx that
 * terminates TLS with a certificate this test makes (curl trusts its CA through CURL_CA_BUNDLE, nothing
 * system-wide), in front of Atrium; the settings in a pds.env file of the test's own (PDS_ENV_FILE). What they do
 * is checked in the database, not only in what they print. Engine-independent: one run (the takedown itself is
 * checked on both engines by takedown.test.ts).
 */

const SCRIPTS = path.resolve(import.meta.dirname, "../fixtures/pdsadmin");
/** The scripts as the reference has them (May 2026): a copy that drifted would test something else. */
const REFERENCE_SHA256: Record<string, string> = {
  "account.sh": "1fee389edb8187c0b8c2c9f9e7b103f9ac66d768f8202cbca2a8461ad3acbf75",
  "create-invite-code.sh": "b4b2241a928567fa8522755d6766dc83f034ff923df2fc1ab67a81a4f9654466",
  "request-crawl.sh": "cf3392c5f258feb1aa86a7eb0082116c9efd5985066c0753ab16fcbd98724225",
};
const ADMIN_PASSWORD = randomBytes(16).toString("hex");
const PASSWORD = "correct horse battery";

type Run = { code: number | null; stdout: string; stderr: string };

let certificates: TestCertificates;
let server: TestServer;
let nginx: Nginx;
let relay: RelayStandIn;
let dir: string;
let hostname: string;
const accounts: Record<string, { did: string; handle: string }> = {};

/** Runs a pdsadmin script with bash, the environment an operator's shell has, and `input` on its standard input. */
function pdsadmin(script: string, args: string[], options: { envFile?: string; input?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", [path.join(SCRIPTS, script), ...args], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir, PDS_ENV_FILE: options.envFile ?? path.join(dir, "pds.env"), CURL_CA_BUNDLE: certificates.caFile, NODE_ENV: "test" },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? "");
  });
}

type AccountRow = { passwordHash: string; takendownAt: unknown; takedownRef: string | null };

/** The account's row as the database has it now (undefined once deleted). */
async function accountRow(did: string): Promise<AccountRow | undefined> {
  return rowOf<AccountRow>(server.database(), sql`SELECT "passwordHash", "takendownAt", "takedownRef" FROM "Account" WHERE "did" = ${did}`);
}

/** Atrium's own answer, straight from its port (not through pdsadmin). */
async function repoStatus(did: string): Promise<Record<string, unknown>> {
  return (await fetch(`http://127.0.0.1:${server.port}/xrpc/com.atproto.sync.getRepoStatus?did=${did}`)).json() as Promise<Record<string, unknown>>;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "atrium-pdsadmin-"));
  certificates = makeTestCertificates(["localhost", "127.0.0.1"]);
  relay = await startRelayStandIn();
  const port = await holdFreePort();
  hostname = `localhost:${port.port}`;
  const issuer = `https://${hostname}`;
  // An https issuer, as pdsadmin's servers have: the production password cost (the test cost is refused for one), and
  // the keys that sign for every account from the environment (docs/decisions/0050).
  const keys = { ATRIUM_PLC_ROTATION_KEY: randomBytes(32).toString("hex"), ATRIUM_KEY_ENCRYPTION_KEY: randomBytes(32).toString("hex") };
  server = await startTestServer({ PUBLIC_URL: issuer, ATRIUM_TRUST_PROXY: "1", ATRIUM_ADMIN_PASSWORD: ADMIN_PASSWORD, ATRIUM_TEST_FAST_PASSWORD_HASHES: "0", ...keys });
  nginx = await startNginx({ port, upstreamPorts: [server.port], tls: certificates });
  for (const name of ["alice", "bob", "carol"]) {
    const printed: string[] = [];
    await runAccountCommand(["create", "--handle", `${name}.test`, "--email", `${name}@example.com`, "--password", PASSWORD], {
      env: { ...process.env, DATABASE_URL: server.databaseUrl, PUBLIC_URL: issuer, ...keys },
      print: (line) => printed.push(line),
    });
    accounts[name] = JSON.parse(printed.join("")) as { did: string; handle: string };
  }
  writeFileSync(path.join(dir, "pds.env"), `PDS_HOSTNAME=${hostname}\nPDS_ADMIN_PASSWORD=${ADMIN_PASSWORD}\nPDS_CRAWLERS=${relay.url}\n`);
  writeFileSync(path.join(dir, "wrong.env"), `PDS_HOSTNAME=${hostname}\nPDS_ADMIN_PASSWORD=${randomBytes(16).toString("hex")}\nPDS_CRAWLERS=${relay.url}\n`);
});
afterAll(async () => {
  await nginx?.stop();
  await server?.stop();
  await relay?.stop();
  certificates?.remove();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the reference's pdsadmin, unmodified, over https against Atrium", () => {
  it("runs the reference's scripts byte for byte", () => {
    for (const [script, sha256] of Object.entries(REFERENCE_SHA256)) {
      expect(createHash("sha256").update(readFileSync(path.join(SCRIPTS, script))).digest("hex"), script).toBe(sha256);
    }
  });

  it("account list: a table of every account's handle, email and DID", async () => {
    const listed = await pdsadmin("account.sh", ["list"]);
    expect(listed.stderr).toBe("");
    expect(listed.code).toBe(0);
    const rows = listed.stdout.trim().split("\n").map((line) => line.trim().split(/\s+/));
    expect(rows[0]).toEqual(["Handle", "Email", "DID"]);
    expect(rows.slice(1).sort((a, b) => a[0]!.localeCompare(b[0]!))).toEqual(
      ["alice", "bob", "carol"].map((name) => [`${name}.test`, `${name}@example.com`, accounts[name]!.did]),
    );
  });

  it("a wrong admin password fails every command, and changes nothing", async () => {
    const wrong = path.join(dir, "wrong.env");
    const listed = await pdsadmin("account.sh", ["list"], { envFile: wrong });
    expect(listed.code).not.toBe(0);
    expect(listed.stderr).toContain("401");
    const takedown = await pdsadmin("account.sh", ["takedown", accounts.bob!.did], { envFile: wrong });
    expect(takedown.code).not.toBe(0);
    expect(takedown.stdout).not.toContain("taken down");
    const reset = await pdsadmin("account.sh", ["reset-password", accounts.bob!.did], { envFile: wrong });
    expect(reset.code).not.toBe(0);
    const deleted = await pdsadmin("account.sh", ["delete", accounts.bob!.did], { envFile: wrong, input: "y\n" });
    expect(deleted.code).not.toBe(0);
    const bob = await accountRow(accounts.bob!.did);
    expect(bob?.takendownAt).toBeNull();
    expect(await verifyPassword(PASSWORD, bob!.passwordHash)).toBe(true);
  });

  it("account takedown, then untakedown: the network is told, and the account comes back", async () => {
    const { did } = accounts.alice!;
    const takedown = await pdsadmin("account.sh", ["takedown", did]);
    expect(takedown.stdout.trim()).toBe(`${did} taken down`);
    expect(takedown.code).toBe(0);
    const row = await accountRow(did);
    expect(row?.takendownAt).not.toBeNull();
    // pdsadmin's reference: the time of the takedown, in seconds since the epoch.
    expect(row?.takedownRef).toMatch(/^\d{10}$/);
    expect(await repoStatus(did)).toEqual({ did, active: false, status: "takendown" });

    const untakedown = await pdsadmin("account.sh", ["untakedown", did]);
    expect(untakedown.stdout.trim()).toBe(`${did} untaken down`);
    expect(untakedown.code).toBe(0);
    expect((await accountRow(did))?.takendownAt).toBeNull();
    expect(await repoStatus(did)).toMatchObject({ did, active: true });
  });

  it("account reset-password: the password it prints is the account's", async () => {
    const { did } = accounts.carol!;
    const reset = await pdsadmin("account.sh", ["reset-password", did]);
    expect(reset.code).toBe(0);
    expect(reset.stdout).toContain(`Password reset for ${did}`);
    const password = /New password: (\S+)/.exec(reset.stdout)?.[1];
    expect(password).toMatch(/^[A-Za-z0-9]{24}$/);
    const row = await accountRow(did);
    expect(await verifyPassword(password!, row!.passwordHash)).toBe(true);
    expect(await verifyPassword(PASSWORD, row!.passwordHash)).toBe(false);
  });

  it("account delete (answered y): the account is gone", async () => {
    const { did } = accounts.carol!;
    const declined = await pdsadmin("account.sh", ["delete", did], { input: "n\n" });
    expect(declined.code).toBe(0);
    expect(await accountRow(did)).toBeDefined();
    const deleted = await pdsadmin("account.sh", ["delete", did], { input: "y\n" });
    expect(deleted.stdout).toContain(`${did} deleted`);
    expect(deleted.code).toBe(0);
    expect(await accountRow(did)).toBeUndefined();
    const listed = await pdsadmin("account.sh", ["list"]);
    expect(listed.stdout).not.toContain(did);
  });

  it("request-crawl: the relays named are asked to crawl this server", async () => {
    const before = relay.requests.length;
    const crawl = await pdsadmin("request-crawl.sh", [relay.url]);
    expect(crawl.code).toBe(0);
    expect(crawl.stdout).toContain("done");
    await relay.received(before + 1);
    expect(relay.requests.at(-1)).toEqual({ path: "POST /xrpc/com.atproto.sync.requestCrawl", contentType: "application/json", body: { hostname } });
  });

  describe("with sign-up (createInviteCode, createAccount: issue 31 items 1-4)", () => {
    it("create-invite-code prints a code; a wrong admin password gets none", async () => {
      const made = await pdsadmin("create-invite-code.sh", []);
      expect(made.code).toBe(0);
      expect(made.stdout.trim()).toMatch(/^\S+$/);
      expect(made.stdout.trim()).not.toBe("null");
      const refused = await pdsadmin("create-invite-code.sh", [], { envFile: path.join(dir, "wrong.env") });
      expect(refused.code).not.toBe(0);
    });

    it("account create: an account with the handle and email given, and the password it prints", async () => {
      const created = await pdsadmin("account.sh", ["create", "dave@example.com", "dave.test"]);
      expect(created.stderr).toBe("");
      expect(created.code).toBe(0);
      const did = /DID\s+: (did:\S+)/.exec(created.stdout)?.[1];
      const password = /Password : (\S+)/.exec(created.stdout)?.[1];
      expect(did).toBeDefined();
      const row = await rowOf<{ handle: string; email: string; passwordHash: string }>(server.database(), sql`SELECT "handle", "email", "passwordHash" FROM "Account" WHERE "did" = ${did!}`);
      expect(row).toMatchObject({ handle: "dave.test", email: "dave@example.com" });
      expect(await verifyPassword(password!, row!.passwordHash)).toBe(true);
    });
  });
});
