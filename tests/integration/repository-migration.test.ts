/**
 * Starting this version on a database written by the previous one (docs/decisions/0027, docs/operations.md, "Upgrading"): every
 * existing account gets a repository whose first commit holds its records, their CIDs become DAG-CBOR CIDs, and a
 * record the data model cannot hold is left out. Checked with @atproto/repo's own verification of getRepo's export.
 */
import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { P256Keypair } from "@atproto/crypto";
import { verifyRepoCar } from "@atproto/repo";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateSigningKey } from "../../app/.server/accounts/signing-key.ts";
import { defaultMigrationsDir, migrateDatabase } from "../../app/.server/db/migrate.ts";
import { defaultPostgresMigrationsDir, migratePostgres } from "../../app/.server/db/migrate-postgres.ts";
import { at, sql } from "../../app/.server/db/sql.ts";
import { execute, rowsOf } from "../helpers/databases.ts";
import { accountFor } from "../helpers/store-fixtures.ts";
import { createServerDatabase, type ServerDatabase } from "../helpers/test-database.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { callAnonymous } from "../helpers/xrpc.ts";

const REPOSITORY_MIGRATION = "20261126061531_repository";
const POST = "app.bsky.feed.post";
const ACCOUNTS = ["did:plc:olduser1", "did:plc:olduser2"];
const RECORDS = [
  ["3kold0000001", { $type: POST, text: "written before repositories", createdAt: "2026-01-01T00:00:00.000Z" }],
  ["3kold0000002", { $type: POST, text: "with a link", subject: { $link: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm" } }],
  ["3kold0000003", { $type: POST, text: "a float the data model cannot hold", ratio: 0.5 }],
] as const;

let database: ServerDatabase;
let server: TestServer;
const keys = new Map<string, string>();

/** The schema as the previous version left it: every migration before this change's. */
async function migrateAsPreviousVersion(): Promise<void> {
  const engineDir = database.path === undefined ? defaultPostgresMigrationsDir() : defaultMigrationsDir();
  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-old-migrations-"));
  try {
    cpSync(engineDir, dir, { recursive: true });
    for (const name of readdirSync(dir)) if (name >= REPOSITORY_MIGRATION && name !== "migration_lock.toml") rmSync(path.join(dir, name), { recursive: true });
    if (database.path === undefined) await migratePostgres(database.url, dir);
    else migrateDatabase(database.path, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

beforeAll(async () => {
  database = await createServerDatabase();
  await migrateAsPreviousVersion();
  const db = database.open();
  for (const did of ACCOUNTS) {
    const account = accountFor(did, { signingKey: await generateSigningKey() });
    keys.set(did, account.signingKey);
    await execute(db, sql`INSERT INTO "Account" ("did", "handle", "email", "passwordHash", "signingKey", "createdAt", "updatedAt")
      VALUES (${did}, ${account.handle}, ${account.email}, ${account.passwordHash}, ${account.signingKey}, ${at(account.createdAt)}, ${at(account.createdAt)})`);
    for (const [rkey, value] of RECORDS) {
      // The old code's shape: the CID of the raw JSON bytes, no repository.
      await execute(db, sql`INSERT INTO "Record" ("did", "collection", "rkey", "cid", "value", "createdAt", "updatedAt")
        VALUES (${did}, ${POST}, ${rkey}, ${"bafkreiraw" + rkey}, ${JSON.stringify(value)}, ${at(1)}, ${at(1)})`);
    }
  }
  server = await startTestServer({ DATABASE_URL: database.url });
});
afterAll(async () => {
  await server?.stop();
  await database?.remove();
});

describe("starting on a database of the previous version", () => {
  it("gives each existing account a repository holding its records, verified with its did:key", async () => {
    for (const did of ACCOUNTS) {
      const response = await fetch(`${server.issuer}/xrpc/com.atproto.sync.getRepo?did=${did}`);
      expect(response.status).toBe(200);
      const { d } = JSON.parse(keys.get(did)!) as { d: string };
      const didKey = (await P256Keypair.import(Buffer.from(d, "base64url"))).did();
      const verified = await verifyRepoCar(new Uint8Array(await response.arrayBuffer()), did, didKey);
      expect(verified.creates.map((op) => op.rkey).sort()).toEqual(["3kold0000001", "3kold0000002"]);
      const listed = await callAnonymous<{ records: Array<{ uri: string; cid: string; value: unknown }> }>(server, "com.atproto.repo.listRecords", { params: { repo: did, collection: POST } });
      expect(listed.body.records.map((record) => [record.uri.split("/").pop(), record.cid]).sort()).toEqual(verified.creates.map((op) => [op.rkey, op.cid.toString()]).sort());
      expect(listed.body.records.map((record) => record.value)).toContainEqual(RECORDS[1][1]);
    }
  });

  it("left out the record the data model cannot hold, and said so in the log", async () => {
    const rows = await rowsOf<{ rkey: string }>(database.open(), sql`SELECT "rkey" FROM "Record" WHERE "rkey" = ${"3kold0000003"}`);
    expect(rows).toEqual([]);
    expect(await server.printed("cannot hold")).toContain("cannot hold");
  });

  it("announced each repository with one #sync event, and a restart migrates nothing twice", async () => {
    const events = async () => rowsOf<{ did: string; type: string }>(database.open(), sql`SELECT "did", "type" FROM "RepoEvent" ORDER BY "seq"`);
    expect((await events()).map((event) => [event.did, event.type]).sort()).toEqual(ACCOUNTS.map((did) => [did, "sync"]));
    const second = await startTestServer({ DATABASE_URL: database.url });
    await second.stop();
    expect(await events()).toHaveLength(ACCOUNTS.length);
  });
});
