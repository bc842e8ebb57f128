/**
 * Keys that a copy of the database does not give away (issue 30, item 6; docs/decisions/0050), against started
 * servers, real SQLite files or PostgreSQL databases, and the test run's real PLC directory. A database copied from a
 * running server with accounts, opened by another process without the environment's keys, can produce no commit
 * signature and no PLC operation that the network accepts for any account: its stored keys are sealed, it holds no
 * rotation key, and a server started on it without the keys refuses to start, saying why. Keys stored in the clear by
 * an earlier version are sealed at start, by several processes at once; the key is rotated by a command.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { P256Keypair, Secp256k1Keypair, verifySignature, type Keypair } from "@atproto/crypto";
import * as plc from "@did-plc/lib";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { encryptionKey, KeyRing } from "../../app/.server/accounts/key-encryption.ts";
import { accountKeypair, generateSigningKey, SigningKeys } from "../../app/.server/accounts/signing-key.ts";
import { migrateDatabase } from "../../app/.server/db/migrate.ts";
import { sql, type Database } from "../../app/.server/db/sql.ts";
import { operationCid, signOperation } from "../../app/.server/identity/plc-operation.ts";
import { PROJECT_ROOT } from "../../scripts/lib/server-process.ts";
import { rowsOf } from "../helpers/databases.ts";
import { insertAccount } from "../helpers/store-fixtures.ts";
import { ALICE } from "../helpers/flow.ts";
import { createTestDatabase } from "../helpers/postgres.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { createServerDatabase, openDatabaseAt, type ServerDatabase } from "../helpers/test-database.ts";
import { call, tokenWithScope } from "../helpers/xrpc.ts";
import { accountDidKey } from "../helpers/xrpc-extra.ts";

const run = promisify(execFile);
const directoryUrl = inject("plcDirectoryUrl");
const hex = () => randomBytes(32).toString("hex");
const BOB = { handle: "bob.test", email: "bob@example.com", password: "bob's long password" };

/** The keys the running server has from its environment, and no other process is given. */
const KEYS = { ATRIUM_PLC_ROTATION_KEY: hex(), ATRIUM_KEY_ENCRYPTION_KEY: hex() };

/**
 * A copy of the server's database as an operator's backup makes it while the server runs: SQLite's online backup
 * (what `sqlite3 … ".backup"` does), or pg_dump restored into a new database.
 */
async function copyOf(server: TestServer): Promise<{ url: string; remove(): Promise<void> }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-copy-"));
  const remove = async () => rmSync(dir, { recursive: true, force: true });
  if (server.databasePath !== undefined) {
    const file = path.join(dir, "copy.db");
    await server.db().backup(file);
    return { url: `file:${file}`, remove };
  }
  const dump = path.join(dir, "dump.sql");
  await run("pg_dump", ["--no-owner", "--no-privileges", "-f", dump, server.databaseUrl]);
  const url = await createTestDatabase({ migrated: false });
  await run("psql", ["-q", "-v", "ON_ERROR_STOP=1", "-f", dump, url]);
  return { url, remove };
}

/** The account CLI, built, in its own process: as an operator runs it on a machine that has only the database. */
async function accountCli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ["build/server/account.js", ...args], { cwd: PROJECT_ROOT, env: { ...process.env, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** What a server started with `settings` printed as it refused to start ("" when it started, and it is stopped). */
async function refusalToStart(settings: Record<string, string>): Promise<string> {
  try {
    await (await startTestServer(settings)).stop();
    return "";
  } catch (error) {
    return String(error);
  }
}

/** The DID's last operation, as the directory has it. */
async function lastOperation(did: string): Promise<plc.Operation> {
  return (await (await fetch(`${directoryUrl}/${did}/log/last`)).json()) as plc.Operation;
}

/**
 * Every key an attacker holding only the copy could try: each stored signing key read as a private JWK (as versions
 * before docs/decisions/0050 stored it), each stored secret's bytes read as an AES key, a P-256 and a secp256k1
 * private key, and the keys a server started on the copy would generate for itself.
 */
async function candidateKeys(copy: Database): Promise<{ aes: Buffer[]; signers: Keypair[] }> {
  const secrets = await rowsOf<{ name: string; value: string }>(copy, sql`SELECT "name", "value" FROM "ServerSecret"`);
  const bytes = [...secrets.map((secret) => Buffer.from(secret.value, "base64url")), randomBytes(32)];
  const signers: Keypair[] = [];
  for (const { signingKey } of await rowsOf<{ signingKey: string }>(copy, sql`SELECT "signingKey" FROM "Account"`)) {
    const inTheClear = await accountKeypair(signingKey).catch(() => undefined);
    if (inTheClear) signers.push(inTheClear);
  }
  for (const key of bytes) {
    signers.push(await Secp256k1Keypair.import(key));
    signers.push(await P256Keypair.import(key));
  }
  return { aes: bytes, signers };
}

describe("a copy of a running server's database, without the environment's keys", () => {
  let server: TestServer;
  let accounts: Array<{ did: string; handle: string }>;
  let copy: { url: string; remove(): Promise<void> };
  let copyDb: Database;

  beforeAll(async () => {
    server = await startTestServer(KEYS);
    accounts = [await createAccount(server, ALICE, { env: KEYS }), await createAccount(server, BOB, { env: KEYS })];
    const token = await tokenWithScope(server, "atproto transition:generic");
    const created = await call(token, "com.atproto.repo.createRecord", {
      json: { repo: accounts[0]!.did, collection: "app.bsky.feed.post", record: { $type: "app.bsky.feed.post", text: "before the copy", createdAt: new Date().toISOString() } },
    });
    expect(created.status).toBe(200);
    copy = await copyOf(server);
    copyDb = openDatabaseAt(copy.url);
  });
  afterAll(async () => {
    await copyDb?.close();
    await copy?.remove();
    await server?.stop();
  });

  it("holds every signing key sealed and no rotation key; with the environment's key, the same rows open (the check can fail)", async () => {
    const rows = await rowsOf<{ did: string; signingKey: string }>(copyDb, sql`SELECT "did", "signingKey" FROM "Account" ORDER BY "did"`);
    expect(rows.map((row) => row.did).sort()).toEqual(accounts.map((account) => account.did).sort());
    for (const row of rows) {
      expect(row.signingKey).toMatch(/^aes256gcm:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+$/);
      expect(row.signingKey).not.toContain('"d"');
    }
    const names = (await rowsOf<{ name: string }>(copyDb, sql`SELECT "name" FROM "ServerSecret"`)).map((row) => row.name);
    expect(names).not.toContain("plc_rotation_key");
    expect(names).not.toContain("key_encryption_key");
    // The environment's key opens each, and it is the key the account's DID document names.
    const keys = new SigningKeys(new KeyRing(encryptionKey(Buffer.from(KEYS.ATRIUM_KEY_ENCRYPTION_KEY, "hex"))));
    for (const row of rows) expect((await keys.keypair(row.did, row.signingKey)).did()).toBe(await accountDidKey(row.did));
  });

  it("no key found in it opens a signing key, signs a commit the account's did:key verifies, or signs a PLC operation the directory accepts", async () => {
    const { aes, signers } = await candidateKeys(copyDb);
    const rows = await rowsOf<{ did: string; signingKey: string }>(copyDb, sql`SELECT "did", "signingKey" FROM "Account"`);
    for (const row of rows) {
      for (const key of aes) expect(() => new SigningKeys(new KeyRing(encryptionKey(key))).open(row.did, row.signingKey)).toThrow();
      const commit = new TextEncoder().encode(`a commit of ${row.did}`);
      const didKey = await accountDidKey(row.did);
      const last = await lastOperation(row.did);
      for (const signer of signers) {
        expect(await verifySignature(didKey, commit, await signer.sign(commit))).toBe(false);
        // The next operation of the DID, signed with the candidate: the reference's check refuses it, and so does the
        // directory itself.
        const { sig: _sig, ...fields } = last;
        void _sig;
        const forged = await signOperation({ ...fields, type: "plc_operation" as const, services: { atproto_pds: { type: "AtprotoPersonalDataServer", endpoint: "https://attacker.example" } }, prev: await operationCid(last) }, signer);
        await expect(plc.assureValidSig(last.rotationKeys, forged as plc.Operation)).rejects.toThrow();
        const submitted = await fetch(`${directoryUrl}/${row.did}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(forged) });
        expect(submitted.status).toBe(400);
      }
      expect((await lastOperation(row.did)).services).toEqual(last.services);
    }
  });

  it("a server started on it without the keys refuses to start, naming the missing key; so does the account tool", async () => {
    const refusal = await refusalToStart({ DATABASE_URL: copy.url });
    expect(refusal).toContain("server exited (1) before listening");
    expect(refusal).toContain("ATRIUM_KEY_ENCRYPTION_KEY is not set, and 2 accounts' signing keys are");
    expect(refusal).toContain("A new key would open none of them.");
    const tool = await accountCli(["delete", "--handle", BOB.handle, "--tombstone"], { DATABASE_URL: copy.url, PUBLIC_URL: server.issuer });
    expect(tool.code).toBe(1);
    expect(tool.stderr).toContain("ATRIUM_KEY_ENCRYPTION_KEY is not set");
    // Nothing was generated into it, nothing deleted, the DIDs unchanged.
    expect((await rowsOf<{ name: string }>(copyDb, sql`SELECT "name" FROM "ServerSecret" WHERE "name" = 'key_encryption_key'`)).length).toBe(0);
    expect((await rowsOf(copyDb, sql`SELECT "did" FROM "Account"`)).length).toBe(2);
    for (const account of accounts) expect((await lastOperation(account.did)).type).toBe("plc_operation");
  });
});

/**
 * A database of the describe block's own (a server started on it with DATABASE_URL does not remove it), and the
 * servers to stop at the block's end.
 */
function ownDatabase(): { readonly database: ServerDatabase; servers: TestServer[] } {
  let database: ServerDatabase | undefined;
  const servers: TestServer[] = [];
  beforeAll(async () => {
    database = await createServerDatabase();
  });
  afterAll(async () => {
    for (const server of servers) await server.stop();
    await database?.remove();
  });
  return {
    get database() {
      if (!database) throw new Error("the database is made before the block's tests");
      return database;
    },
    servers,
  };
}

describe("keys stored in the clear by an earlier version", () => {
  const own = ownDatabase();
  const servers = own.servers;

  it("are sealed at start by two processes starting at once, each key once, and both serve the accounts' commits", async () => {
    const database = own.database;
    // A fresh SQLite file is migrated by the server's start; the accounts must be there before it.
    if (database.path !== undefined) migrateDatabase(database.path);
    const db = database.open();
    const didKeys = new Map<string, string>();
    for (let i = 0; i < 40; i++) {
      const did = `did:plc:clear${String(i).padStart(19, "0")}`;
      const privateJwk = await generateSigningKey();
      didKeys.set(did, (await accountKeypair(privateJwk)).did());
      await insertAccount(db, did, { signingKey: privateJwk, handle: `clear${i}.test`, email: `clear${i}@example.com` });
    }
    const settings = { DATABASE_URL: database.url, ATRIUM_KEY_ENCRYPTION_KEY: KEYS.ATRIUM_KEY_ENCRYPTION_KEY };
    servers.push(...(await Promise.all([startTestServer(settings), startTestServer(settings)])));
    // Logged before it listened; written by the time its next line is (the log is written in batches).
    for (const server of servers) await server.printed("Atrium is serving");
    const sealed = servers.flatMap((server) =>
      server
        .output()
        .split("\n")
        .filter((line) => line.includes("Sealed the signing keys stored in the clear"))
        .map((line) => (JSON.parse(line) as { accounts: number }).accounts),
    );
    expect(sealed.reduce((sum, count) => sum + count, 0)).toBe(40);
    const rows = await rowsOf<{ did: string; signingKey: string }>(db, sql`SELECT "did", "signingKey" FROM "Account"`);
    const keys = new SigningKeys(new KeyRing(encryptionKey(Buffer.from(KEYS.ATRIUM_KEY_ENCRYPTION_KEY, "hex"))));
    for (const row of rows) {
      expect(row.signingKey).toMatch(/^aes256gcm:/);
      expect((await keys.keypair(row.did, row.signingKey)).did()).toBe(didKeys.get(row.did));
    }
    // Each account's first commit (the repository migration of the start) is signed by its own key.
    for (const did of [...didKeys.keys()].slice(0, 3)) {
      const head = await fetch(`${servers[0]!.issuer}/xrpc/com.atproto.sync.getLatestCommit?did=${did}`);
      expect(head.status).toBe(200);
    }
  });
});

describe("rotating the key (npm run account -- rotate-key-encryption)", () => {
  const own = ownDatabase();
  const stopLater = own.servers;

  it("with the new key and the old as a previous one, the command seals every key under the new; then the new key alone serves, the old alone is refused", async () => {
    const database = own.database;
    const oldKey = hex();
    const newKey = hex();
    const base = { DATABASE_URL: database.url, ATRIUM_PLC_ROTATION_KEY: KEYS.ATRIUM_PLC_ROTATION_KEY };
    const first = await startTestServer({ ...base, ATRIUM_KEY_ENCRYPTION_KEY: oldKey });
    const alice = await createAccount(first, ALICE, { env: { ...base, ATRIUM_KEY_ENCRYPTION_KEY: oldKey } });
    await createAccount(first, BOB, { env: { ...base, ATRIUM_KEY_ENCRYPTION_KEY: oldKey } });
    await first.stop();

    const during = await startTestServer({ ...base, ATRIUM_KEY_ENCRYPTION_KEY: newKey, ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS: oldKey });
    stopLater.push(during);
    const rotated = await accountCli(["rotate-key-encryption"], { ...base, PUBLIC_URL: during.issuer, ATRIUM_KEY_ENCRYPTION_KEY: newKey, ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS: oldKey });
    expect(rotated.code, rotated.stderr).toBe(0);
    const outcome = JSON.parse(rotated.stdout) as { keyId: string; resealed: number; remaining: number };
    expect(outcome).toMatchObject({ keyId: encryptionKey(Buffer.from(newKey, "hex")).id, resealed: 2, remaining: 0 });
    // Run again, it has nothing left to do.
    expect(JSON.parse((await accountCli(["rotate-key-encryption"], { ...base, PUBLIC_URL: during.issuer, ATRIUM_KEY_ENCRYPTION_KEY: newKey, ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS: oldKey })).stdout)).toMatchObject({ resealed: 0, remaining: 0 });
    await during.stop();
    stopLater.pop();

    const after = await startTestServer({ ...base, ATRIUM_KEY_ENCRYPTION_KEY: newKey });
    stopLater.push(after);
    const token = await tokenWithScope(after, "atproto transition:generic");
    const serviceAuth = await call<{ token: string }>(token, "com.atproto.server.getServiceAuth", { params: { aud: "did:web:feed.example.com", lxm: "app.bsky.feed.getFeedSkeleton" } });
    expect(serviceAuth.status).toBe(200);
    const [header, payload, signature] = serviceAuth.body.token.split(".") as [string, string, string];
    expect(await verifySignature(await accountDidKey(alice.did), new TextEncoder().encode(`${header}.${payload}`), Buffer.from(signature, "base64url"))).toBe(true);

    const refused = await refusalToStart({ ...base, ATRIUM_KEY_ENCRYPTION_KEY: oldKey });
    expect(refused).toContain("2 accounts' signing keys are");
    expect(refused).toContain("neither ATRIUM_KEY_ENCRYPTION_KEY");
  });
});

describe("an https issuer", () => {
  it("does not start without the keys from the environment, and names each missing one with how to make it", async () => {
    const refusal = await refusalToStart({ PUBLIC_URL: "https://pds.example.com", ATRIUM_TEST_FAST_PASSWORD_HASHES: "" });
    expect(refusal).toContain("server exited (1) before listening");
    expect(refusal).toContain("ATRIUM_PLC_ROTATION_KEY: the secp256k1 key that signs the accounts' DID operations. Make one with `openssl rand -hex 32`");
    expect(refusal).toContain("ATRIUM_KEY_ENCRYPTION_KEY: the key that seals the accounts' signing keys in the database");
  });
});
