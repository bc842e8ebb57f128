/**
 * Identity (issue 18, item 5; docs/decisions/0028a-plc-identity.md): every account is a did:plc registered at the
 * test run's real PLC directory (@did-plc/server, tests/helpers/postgres-global-setup.ts). Checked with the
 * reference's own code: @did-plc/lib validates the operations, the directory's acceptance and documents are read
 * over HTTP, and @atproto/crypto verifies the service-auth token against the document's #atproto key.
 */
import { execFile } from "node:child_process";
import http from "node:http";
import { promisify } from "node:util";
import { formatDidKey, multibaseToBytes, verifySignature } from "@atproto/crypto";
import { cidForCbor } from "@atproto/common";
import * as plc from "@did-plc/lib";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { SqlAccountStore } from "../../app/.server/stores/sql-account-store.ts";
import { accountKeypair, generateSigningKey } from "../../app/.server/accounts/signing-key.ts";
import { PROJECT_ROOT } from "../../scripts/lib/server-process.ts";
import { rowOf } from "../helpers/databases.ts";
import { ALICE, createAlice } from "../helpers/flow.ts";
import { freePort, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { CookieJar, openConsentPage, visibleText } from "../helpers/consent.ts";
import { call, callAnonymous, expectInsufficientScope, tokensForScopes, type ScopedToken } from "../helpers/xrpc.ts";
import { loopbackClient, pushScope } from "../helpers/xrpc-extra.ts";

const run = promisify(execFile);
const directoryUrl = inject("plcDirectoryUrl");

let server: TestServer;
let alice: { did: string; handle: string };
let tokens: Record<"generic" | "move" | "atproto", ScopedToken>;

const CREATE_ACCOUNT = "com.atproto.server.createAccount";
const NEW_PDS = "did:web:newpds.example";
/** Only the first step of moving to NEW_PDS (its #atproto_pds service). */
const MOVE_SCOPE = `atproto rpc:${CREATE_ACCOUNT}?aud=${NEW_PDS}%23atproto_pds`;

type DidDocument = {
  id: string;
  alsoKnownAs: string[];
  verificationMethod: { id: string; type: string; publicKeyMultibase: string }[];
  service: { id: string; type: string; serviceEndpoint: string }[];
};

async function didDocument(did: string): Promise<DidDocument> {
  const response = await fetch(`${directoryUrl}/${did}`);
  expect(response.status).toBe(200);
  return (await response.json()) as DidDocument;
}

async function operationLog(did: string): Promise<plc.CompatibleOpOrTombstone[]> {
  const response = await fetch(`${directoryUrl}/${did}/log`);
  expect(response.status).toBe(200);
  return (await response.json()) as plc.CompatibleOpOrTombstone[];
}

/** The document's #atproto key as a did:key (the legacy form this directory serves, or Multikey). */
function atprotoKeyOf(document: DidDocument): string {
  const method = document.verificationMethod.find((entry) => entry.id === "#atproto" || entry.id === `${document.id}#atproto`)!;
  if (method.type === "Multikey") return `did:key:${method.publicKeyMultibase}`;
  expect(method.type).toBe("EcdsaSecp256r1VerificationKey2019");
  return formatDidKey("ES256", multibaseToBytes(method.publicKeyMultibase));
}

/**
 * How the account CLI is run: built (`node build/server/account.js`, the build the server runs, as the benchmarks run
 * it), or from its source through tsx (`npm run account`, as the README has operators type it). One test takes the
 * second way; the others the first: 0.5 s of CPU to list the accounts, where tsx takes 2.2 s (it compiles the app at
 * every run).
 */
const CLI = { built: ["build/server/account.js"], source: ["--import", "tsx", "scripts/account.ts"] };

/** The account CLI in its own process, as an operator runs it. */
async function accountCli(args: string[], env: Record<string, string> = {}, from: keyof typeof CLI = "built"): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...CLI[from], ...args], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, DATABASE_URL: server.databaseUrl, PUBLIC_URL: server.issuer, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** GET with a Host header of our choosing (fetch does not let a caller set Host): as a resolver asking <handle>. */
function getAs(host: string, url: string): Promise<{ status: number; contentType: string | undefined; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: { Host: host } }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (text += chunk));
      response.on("end", () => resolve({ status: response.statusCode!, contentType: response.headers["content-type"], text }));
    });
    request.on("error", reject);
  });
}

async function accountCount(handle: string): Promise<number> {
  return (await rowOf<{ n: number }>(server.database(), sql`SELECT COUNT(*) AS "n" FROM "Account" WHERE "handle" = ${handle}`))!.n * 1;
}

beforeAll(async () => {
  server = await startTestServer({ ATRIUM_USER_DOMAINS: ".test" });
  alice = await createAlice(server);
  tokens = await tokensForScopes(server, { generic: "atproto transition:generic", move: MOVE_SCOPE, atproto: "atproto" });
});
afterAll(async () => {
  await server?.stop();
});

describe("creating an account registers its did:plc", () => {
  it("the genesis operation is valid for the DID (@did-plc/lib) and names the handle, the account's key, this PDS and the server's rotation key", async () => {
    const log = await operationLog(alice.did);
    expect(log).toHaveLength(1);
    const genesis = log[0]!;
    // The reference's own checks: the DID is the hash of this signed operation, and its signature is by a rotation key.
    const data = await plc.assureValidCreationOp(alice.did, genesis);
    expect(await plc.didForCreateOp(genesis as plc.Operation)).toBe(alice.did);
    expect(data.alsoKnownAs).toEqual([`at://${ALICE.handle}`]);
    expect(data.services).toEqual({ atproto_pds: { type: "AtprotoPersonalDataServer", endpoint: server.issuer } });
    expect(data.rotationKeys).toHaveLength(1);
    expect(data.rotationKeys[0]).toMatch(/^did:key:zQ3s/); // secp256k1
    const document = await didDocument(alice.did);
    expect(atprotoKeyOf(document)).toBe(data.verificationMethods.atproto);
    expect(document.service).toEqual([{ id: "#atproto_pds", type: "AtprotoPersonalDataServer", serviceEndpoint: server.issuer }]);
  });

  it("a getServiceAuth token verifies against the #atproto key of the DID document (@atproto/crypto)", async () => {
    const result = await call<{ token: string }>(tokens.generic, "com.atproto.server.getServiceAuth", {
      params: { aud: "did:web:feed.example.com", lxm: "app.bsky.feed.getFeedSkeleton" },
    });
    expect(result.status).toBe(200);
    const [header, payload, signature] = result.body.token.split(".") as [string, string, string];
    const key = atprotoKeyOf(await didDocument(alice.did));
    const signed = new TextEncoder().encode(`${header}.${payload}`);
    expect(await verifySignature(key, signed, Buffer.from(signature, "base64url"))).toBe(true);
    expect(await verifySignature(key, new TextEncoder().encode(`${header}.${payload}x`), Buffer.from(signature, "base64url"))).toBe(false);
    expect(JSON.parse(Buffer.from(payload, "base64url").toString())).toMatchObject({ iss: alice.did, aud: "did:web:feed.example.com" });
  });

  it("every account gets its own DID and key", async () => {
    const { stdout } = await accountCli(["create", "--handle", "carol.test", "--email", "carol@example.com", "--password", "carol's long password"], {}, "source");
    const carol = JSON.parse(stdout) as { did: string };
    expect(carol.did).toMatch(/^did:plc:[a-z2-7]{24}$/);
    expect(carol.did).not.toBe(alice.did);
    await plc.assureValidCreationOp(carol.did, (await operationLog(carol.did))[0]!);
    expect(atprotoKeyOf(await didDocument(carol.did))).not.toBe(atprotoKeyOf(await didDocument(alice.did)));
  });

  it("when the directory cannot be reached, nothing is written and the CLI exits 1 saying why", async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const result = await accountCli(["create", "--handle", "dan.test", "--email", "dan@example.com", "--password", "dan's long password"], {
      ATRIUM_PLC_DIRECTORY_URL: closed,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`The PLC directory at ${closed} could not be reached`);
    expect(result.stdout).toBe("");
    expect(await accountCount("dan.test")).toBe(0);
  });

  it("a taken handle is refused before anything is registered", async () => {
    const before = await (await fetch(`${directoryUrl}/export`)).text();
    const result = await accountCli(["create", "--handle", ALICE.handle, "--email", "other@example.com", "--password", "another long password"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("already taken");
    expect(await (await fetch(`${directoryUrl}/export`)).text()).toBe(before);
  });

  it("a directory that is neither https nor loopback http is refused at start", async () => {
    const result = await accountCli(["list"], { ATRIUM_PLC_DIRECTORY_URL: "http://plc.example.com" });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("ATRIUM_PLC_DIRECTORY_URL: must be an https URL");
  });
});

describe("handles", () => {
  it("/.well-known/atproto-did answers the DID as text for a handle under ATRIUM_USER_DOMAINS, 404 otherwise", async () => {
    const answer = await getAs(ALICE.handle, `${server.issuer}/.well-known/atproto-did`);
    expect(answer.status).toBe(200);
    expect(answer.contentType).toMatch(/^text\/plain/);
    expect(answer.text).toBe(alice.did);
    expect((await getAs(`${ALICE.handle}:443`, `${server.issuer}/.well-known/atproto-did`)).text).toBe(alice.did);
    for (const host of ["nobody.test", "alice.example.com", new URL(server.issuer).host]) {
      expect((await getAs(host, `${server.issuer}/.well-known/atproto-did`)).status).toBe(404);
    }
  });

  it("resolveHandle answers for a local handle", async () => {
    const result = await callAnonymous<{ did: string }>(server, "com.atproto.identity.resolveHandle", { params: { handle: ALICE.handle } });
    expect(result.status).toBe(200);
    expect(result.body.did).toBe(alice.did);
  });

  it("updateHandle signs a PLC update chained to the last operation, then changes the handle here", async () => {
    const result = await call(tokens.generic, "com.atproto.identity.updateHandle", { json: { handle: "alice-renamed.test" } });
    expect(result.status).toBe(200);
    const log = (await operationLog(alice.did)) as plc.Operation[];
    expect(log).toHaveLength(2);
    const data = await plc.assureValidCreationOp(alice.did, log[0]!);
    // The reference's checks: signed by a rotation key of the previous operation, prev = its CID.
    await plc.assureValidSig(data.rotationKeys, log[1]!);
    expect(log[1]!.prev).toBe((await cidForCbor(log[0]!)).toString());
    expect((await didDocument(alice.did)).alsoKnownAs).toEqual(["at://alice-renamed.test"]);
    const resolved = await callAnonymous<{ did: string }>(server, "com.atproto.identity.resolveHandle", { params: { handle: "alice-renamed.test" } });
    expect(resolved.body.did).toBe(alice.did);
    const back = await call(tokens.generic, "com.atproto.identity.updateHandle", { json: { handle: ALICE.handle } });
    expect(back.status).toBe(200);
    expect((await didDocument(alice.did)).alsoKnownAs).toEqual([`at://${ALICE.handle}`]);
  });
});

describe("an account made before DIDs were registered", () => {
  const LEGACY_DID = "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa";
  let legacyKey: string;

  beforeAll(async () => {
    const store = new SqlAccountStore(server.database());
    const aliceRow = (await rowOf<{ passwordHash: string }>(server.database(), sql`SELECT "passwordHash" FROM "Account" WHERE "did" = ${alice.did}`))!;
    // Its signing key in the clear, as the versions before docs/decisions/0050 stored it: the CLI seals it first.
    const privateJwk = await generateSigningKey();
    legacyKey = (await accountKeypair(privateJwk)).did();
    const clash = await store.insert({
      did: LEGACY_DID,
      handle: "legacy.test",
      email: "legacy@example.com",
      passwordHash: aliceRow.passwordHash,
      emailConfirmedAt: null,
      signingKey: privateJwk,
      createdAt: 1_700_000_000_000,
    });
    expect(clash).toBeUndefined();
  });

  it("register without --new-did refuses, saying why, and changes nothing", async () => {
    const result = await accountCli(["register", "--handle", "legacy.test"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("was never registered and cannot be");
    expect(result.stderr).toContain("--new-did");
    expect((await rowOf<{ did: string }>(server.database(), sql`SELECT "did" FROM "Account" WHERE "handle" = 'legacy.test'`))!.did).toBe(LEGACY_DID);
  });

  it("register --new-did re-creates it under a registered did:plc, keeping handle, email and key", async () => {
    const result = await accountCli(["register", "--handle", "legacy.test", "--new-did"]);
    expect(result.code).toBe(0);
    const answer = JSON.parse(result.stdout) as { did: string; previousDid: string };
    expect(answer.previousDid).toBe(LEGACY_DID);
    await plc.assureValidCreationOp(answer.did, (await operationLog(answer.did))[0]!);
    const row = await rowOf<{ did: string; email: string; signingKey: string }>(server.database(), sql`SELECT "did", "email", "signingKey" FROM "Account" WHERE "handle" = 'legacy.test'`);
    expect(row).toMatchObject({ did: answer.did, email: "legacy@example.com" });
    // The same key, named by the new DID's document, and sealed again for the new DID (never in the clear).
    expect(atprotoKeyOf(await didDocument(answer.did))).toBe(legacyKey);
    expect(row!.signingKey).toMatch(/^aes256gcm:/);
    expect(await rowOf(server.database(), sql`SELECT "did" FROM "Account" WHERE "did" = ${LEGACY_DID}`)).toBeUndefined();
  });

  it("register on a registered account changes nothing", async () => {
    const result = await accountCli(["register", "--handle", ALICE.handle]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ did: alice.did, unchanged: true });
  });
});

describe("moving away starts with a service token for com.atproto.server.createAccount (issue 18, item 7)", () => {
  async function serviceToken(token: ScopedToken, aud: string) {
    return call<{ token: string }>(token, "com.atproto.server.getServiceAuth", { params: { aud, lxm: CREATE_ACCOUNT } });
  }

  it("transition:generic gets one for the new PDS, and it verifies against the account's DID document", async () => {
    const result = await serviceToken(tokens.generic, NEW_PDS);
    expect(result.status).toBe(200);
    const [header, payload, signature] = result.body.token.split(".") as [string, string, string];
    const key = atprotoKeyOf(await didDocument(alice.did));
    expect(await verifySignature(key, new TextEncoder().encode(`${header}.${payload}`), Buffer.from(signature, "base64url"))).toBe(true);
    expect(JSON.parse(Buffer.from(payload, "base64url").toString())).toMatchObject({ iss: alice.did, aud: NEW_PDS, lxm: CREATE_ACCOUNT });
  });

  it("rpc:com.atproto.server.createAccount for the new PDS gets one for that PDS only", async () => {
    expect((await serviceToken(tokens.move, NEW_PDS)).status).toBe(200);
    expect((await serviceToken(tokens.move, `${NEW_PDS}#atproto_pds`)).status).toBe(200);
    expectInsufficientScope(await serviceToken(tokens.move, "did:web:elsewhere.example"), `rpc:${CREATE_ACCOUNT}?aud=did:web:elsewhere.example%23atproto_pds`);
    // Nothing else with that scope.
    const other = await call(tokens.move, "com.atproto.server.getServiceAuth", { params: { aud: NEW_PDS, lxm: "app.bsky.feed.getTimeline" } });
    expect(other.status).toBe(403);
  });

  it("a session without that permission is refused", async () => {
    expectInsufficientScope(await serviceToken(tokens.atproto, NEW_PDS), `rpc:${CREATE_ACCOUNT}?aud=${NEW_PDS}%23atproto_pds`);
  });

  it("the consent screen says so in plain words, with a caution", async () => {
    for (const [scope, words] of [
      [MOVE_SCOPE, "Start moving your account to newpds.example (atproto_pds)"],
      ["atproto transition:generic", "Ask another server to open an account in your name: the first step of moving your account away"],
    ] as const) {
      const client = await loopbackClient(server, scope);
      const par = await pushScope(client, scope);
      expect(par.status).toBe(201);
      const page = await openConsentPage(client.authorizeUrl(par.body.request_uri!), new CookieJar());
      expect(page.status).toBe(200);
      expect(visibleText(page.html)).toContain(words);
    }
  });
});
