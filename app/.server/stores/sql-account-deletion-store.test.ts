import { readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ENGINES, execute, openTestDatabase, raceOn, rowOf, rowsOf, type TestDatabase } from "../../../tests/helpers/databases.ts";
import type { Guess } from "../accounts/typed-code-store.ts";
import { at, sql, statementOf, type Database } from "../db/sql.ts";
import { SqlAccountDeletionStore } from "./sql-account-deletion-store.ts";

/**
 * The account-deletion store's contract (docs/decisions/0030), on each engine: a checked code is counted, never
 * spent; the removal spends it, refuses a changed password, removes every row keyed by the DID — every table of
 * prisma/schema.prisma with a `did` or `accountDid` column, found by reading the schema, so that a table added later
 * without a cascade fails here — and appends the #account event, all in one step that only one of many racing wins.
 */

const T = 1_800_000_000_000;
const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
const MAX = 5;
const DAY = 24 * 60 * 60 * 1000;

/**
 * Tables with a `did` that the deletion writes rather than clears: BlobRelease records each of the account's blobs the
 * deletion removed, for the sweep after it to delete the bytes no other account has (docs/decisions/0043).
 */
const WRITTEN_BY_THE_DELETION = new Set(["BlobRelease"]);

/** The tables whose rows belong to an account, and the column that says which, read from the data model. */
function accountKeyedTables(): { table: string; column: "did" | "accountDid" }[] {
  const schema = readFileSync(new URL("../../../prisma/schema.prisma", import.meta.url), "utf8");
  const tables: { table: string; column: "did" | "accountDid" }[] = [];
  for (const [, table, body] of schema.matchAll(/^model (\w+) \{([\s\S]*?)^\}/gm)) {
    if (table === "Account" || WRITTEN_BY_THE_DELETION.has(table!)) continue;
    const column = /^\s+accountDid\s+String/m.test(body!) ? "accountDid" : /^\s+did\s+String/m.test(body!) ? "did" : undefined;
    if (column) tables.push({ table: table!, column });
  }
  return tables;
}

/** One row in every table an account owns (and a #commit event), for `did`. */
async function populate(db: Database, did: string, tag: string): Promise<void> {
  const statements = [
    sql`INSERT INTO "Account" ("did", "handle", "email", "passwordHash", "signingKey", "createdAt", "updatedAt")
      VALUES (${did}, ${`${tag}.test`}, ${`${tag}@example.com`}, ${`scrypt$${tag}`}, '{}', ${at(T)}, ${at(T)})`,
    sql`INSERT INTO "BrowserSession" ("idHash", "accountDid", "createdAt", "lastSeenAt", "expiresAt", "staySignedIn")
      VALUES (${`ses-${tag}`}, ${did}, ${at(T)}, ${at(T)}, ${at(T + DAY)}, ${false})`,
    sql`INSERT INTO "Grant" ("id", "clientId", "accountDid", "scope", "dpopJkt", "createdAt", "lastUsedAt", "expiresAt", "endsAt")
      VALUES (${`grant-${tag}`}, 'https://app.example/client.json', ${did}, 'atproto', 'jkt', ${at(T)}, ${at(T)}, ${at(T + DAY)}, ${at(T + DAY)})`,
    sql`INSERT INTO "AccessToken" ("tokenHash", "grantId", "createdAt", "expiresAt") VALUES (${`tok-${tag}`}, ${`grant-${tag}`}, ${at(T)}, ${at(T + DAY)})`,
    sql`INSERT INTO "RefreshToken" ("tokenHash", "grantId", "createdAt", "expiresAt") VALUES (${`ref-${tag}`}, ${`grant-${tag}`}, ${at(T)}, ${at(T + DAY)})`,
    sql`INSERT INTO "AuthorizationCode" ("codeHash", "clientId", "accountDid", "redirectUri", "scope", "codeChallenge", "dpopJkt", "createdAt", "expiresAt")
      VALUES (${`cod-${tag}`}, 'https://app.example/client.json', ${did}, 'https://app.example/cb', 'atproto', 'challenge', 'jkt', ${at(T)}, ${at(T + DAY)})`,
    sql`INSERT INTO "AuthorizedClient" ("accountDid", "clientId", "scope", "createdAt", "updatedAt") VALUES (${did}, 'https://app.example/client.json', 'atproto', ${at(T)}, ${at(T)})`,
    sql`INSERT INTO "Passkey" ("credentialId", "accountDid", "name", "publicKey", "counter", "deviceType", "backedUp", "createdAt")
      VALUES (${`cred-${tag}`}, ${did}, 'Phone', ${new Uint8Array([1, 2, 3])}, 0, 'singleDevice', ${false}, ${at(T)})`,
    sql`INSERT INTO "RecoveryCode" ("codeHash", "accountDid", "createdAt", "expiresAt") VALUES (${`rec-${tag}`}, ${did}, ${at(T)}, ${at(T + DAY)})`,
    sql`INSERT INTO "TypedCode" ("accountDid", "purpose", "codeHash", "guesses", "createdAt", "expiresAt") VALUES (${did}, 'account-deletion', 'right', 0, ${at(T)}, ${at(T + DAY)})`,
    sql`INSERT INTO "TypedCode" ("accountDid", "purpose", "codeHash", "guesses", "createdAt", "expiresAt") VALUES (${did}, 'recovery', 'other', 0, ${at(T)}, ${at(T + DAY)})`,
    sql`INSERT INTO "Record" ("did", "collection", "rkey", "cid", "value", "createdAt", "updatedAt")
      VALUES (${did}, 'app.bsky.feed.post', '3k', 'bafyrecord', '{}', ${at(T)}, ${at(T)})`,
    sql`INSERT INTO "RecordBlob" ("did", "collection", "rkey", "blobCid") VALUES (${did}, 'app.bsky.feed.post', '3k', 'bafkblob')`,
    sql`INSERT INTO "Blob" ("did", "cid", "declaredType", "mimeType", "size", "bytes", "createdAt")
      VALUES (${did}, 'bafkblob', 'image/png', 'image/png', 3, ${new Uint8Array([1, 2, 3])}, ${at(T)})`,
    sql`INSERT INTO "RepoRoot" ("did", "cid", "rev", "updatedAt") VALUES (${did}, 'bafycommit', '3kaaaaaaaaaaa', ${at(T)})`,
    sql`INSERT INTO "RepoBlock" ("did", "cid", "repoRev", "content") VALUES (${did}, 'bafycommit', '3kaaaaaaaaaaa', ${new Uint8Array([4, 5])})`,
    sql`INSERT INTO "Preferences" ("did", "value", "updatedAt") VALUES (${did}, '[]', ${at(T)})`,
    sql`INSERT INTO "RepoEvent" ("did", "type", "body", "time") VALUES (${did}, 'commit', ${new Uint8Array([6])}, ${at(T)})`,
    sql`INSERT INTO "AppPassword" ("id", "accountDid", "name", "passwordHash", "privileged", "createdAt") VALUES (${`app-${tag}`}, ${did}, 'bot', ${`scrypt$${tag}`}, false, ${at(T)})`,
    sql`INSERT INTO "PasswordSession" ("id", "accountDid", "appPasswordId", "scope", "createdAt", "lastUsedAt", "expiresAt")
      VALUES (${`pss-${tag}`}, ${did}, ${`app-${tag}`}, 'com.atproto.appPass', ${at(T)}, ${at(T)}, ${at(T + DAY)})`,
    sql`INSERT INTO "PasswordAccessToken" ("tokenHash", "sessionId", "expiresAt") VALUES (${`pat-${tag}`}, ${`pss-${tag}`}, ${at(T + DAY)})`,
    sql`INSERT INTO "PasswordRefreshToken" ("tokenHash", "sessionId", "expiresAt") VALUES (${`prt-${tag}`}, ${`pss-${tag}`}, ${at(T + DAY)})`,
    sql`INSERT INTO "AppActivity" ("accountDid", "app", "dayStart", "kind", "target", "count", "lastAt")
      VALUES (${did}, 'oauth:https://app.example/client.json', ${at(T)}, 'record', 'app.bsky.feed.post#create', 3, ${at(T)})`,
    sql`INSERT INTO "RepoImport" ("id", "did", "expiresAt") VALUES (${`imp-${tag}`}, ${did}, ${at(T + DAY)})`,
    sql`INSERT INTO "EndLink" ("tokenHash", "accountDid", "kind", "target", "label", "createdAt", "expiresAt")
      VALUES (${`end-${tag}`}, ${did}, 'browser', 'device', 'Firefox', ${at(T)}, ${at(T + DAY)})`,
  ];
  for (const statement of statements) await execute(db, statement);
}

/** Built once (statementOf): table and column names come from our own schema file, never from input. */
const COUNT_STATEMENTS = accountKeyedTables().map(({ table, column }) => ({ table, count: statementOf(`SELECT COUNT(*) AS "n" FROM "${table}" WHERE "${column}" = ?`) }));

async function rowsFor(db: Database, did: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const { table, count } of COUNT_STATEMENTS) counts[table] = Number((await rowOf<{ n: number | string }>(db, count(did)))!.n);
  return counts;
}

describe.each(ENGINES)("SqlAccountDeletionStore on %s", (engine) => {
  let test: TestDatabase;
  let store: SqlAccountDeletionStore;

  beforeEach(async () => {
    test = await openTestDatabase(engine);
    store = new SqlAccountDeletionStore(test.db, 72 * 60 * 60 * 1000);
    await populate(test.db, ALICE, "alice");
    await populate(test.db, BOB, "bob");
  });
  afterEach(() => test.close());

  const guess = (codeHash: string, on = store, over: Partial<Guess> = {}) =>
    on.check({ accountDid: ALICE, purpose: "account-deletion", codeHash, now: T + 1000, maxGuesses: MAX, ...over });
  const removal = (over: Partial<{ codeHash: string; passwordHash: string; now: number }> = {}) => ({
    did: ALICE, codeHash: "right", passwordHash: "scrypt$alice", now: T + 1000, ...over,
  });
  const guesses = async () => Number((await rowOf<{ guesses: number }>(test.db, sql`SELECT "guesses" FROM "TypedCode" WHERE "accountDid" = ${ALICE} AND "purpose" = 'account-deletion'`))?.guesses);

  it("a check counts a guess and never spends the code; only the deletion code of that account is checked", async () => {
    expect(await guess("right")).toBe("right");
    expect(await guess("wrong")).toBe("wrong");
    expect(await guess("right")).toBe("right");
    expect(await guesses()).toBe(3);
    expect(await guess("other", store, { purpose: "recovery" })).toBe("right"); // the recovery code is its own row
    expect(await guess("right", store, { accountDid: BOB })).toBe("right"); // Bob's own code
    expect(await guess("right", store, { now: T + DAY })).toBe("none");
  });

  it("after the last allowed guess, the code is dead for checks and for the removal's own count", async () => {
    for (let i = 0; i < MAX; i++) await guess(`wrong-${i}`);
    expect(await guess("right")).toBe("none");
  });

  it("the removal deletes every row keyed by the DID, its earlier events, and appends #account deleted; Bob keeps everything", async () => {
    const tables = accountKeyedTables();
    expect(tables.map((entry) => entry.table)).toEqual(expect.arrayContaining(["BrowserSession", "Grant", "Record", "RepoBlock", "Blob", "Passkey", "TypedCode"]));
    const before = await rowsFor(test.db, ALICE);
    // Every account-keyed table of the schema has a row of Alice's here: a new table must be added to `populate`.
    for (const { table } of tables) expect(before[table], `${table} has no row for Alice in populate()`).toBeGreaterThan(0);
    const bobBefore = await rowsFor(test.db, BOB);

    const outcome = await store.remove(removal());
    expect(outcome.deleted).toBe(true);
    // Her one blob, released in the same transaction for the sweep that deletes its bytes; Bob's is not.
    expect(await rowsOf(test.db, sql`SELECT "did", "cid" FROM "BlobRelease"`)).toEqual([{ did: ALICE, cid: "bafkblob" }]);
    const after = await rowsFor(test.db, ALICE);
    for (const { table } of tables) expect(after[table], table).toBe(table === "RepoEvent" ? 1 : 0);
    expect(await rowOf(test.db, sql`SELECT "did" FROM "Account" WHERE "did" = ${ALICE}`)).toBeUndefined();
    // Tokens hang on grants, not on the DID: they went with the grant.
    expect(await rowOf(test.db, sql`SELECT "tokenHash" FROM "AccessToken" WHERE "tokenHash" = 'tok-alice'`)).toBeUndefined();
    expect(await rowOf(test.db, sql`SELECT "tokenHash" FROM "RefreshToken" WHERE "tokenHash" = 'ref-alice'`)).toBeUndefined();
    expect(await rowsFor(test.db, BOB)).toEqual(bobBefore);

    const events = await rowsOf<{ seq: number; type: string }>(test.db, sql`SELECT "seq", "type" FROM "RepoEvent" WHERE "did" = ${ALICE}`);
    expect(events).toEqual([{ seq: outcome.deleted ? outcome.seq : -1, type: "account" }]);
  });

  it("a wrong or expired code, or a password changed since it was checked, changes nothing", async () => {
    expect(await store.remove(removal({ codeHash: "wrong" }))).toEqual({ deleted: false, reason: "code-gone" });
    expect(await store.remove(removal({ now: T + DAY }))).toEqual({ deleted: false, reason: "code-gone" });
    expect(await store.remove(removal({ passwordHash: "scrypt$before-the-change" }))).toEqual({ deleted: false, reason: "password-changed" });
    expect(await rowOf(test.db, sql`SELECT "did" FROM "Account" WHERE "did" = ${ALICE}`)).toBeDefined();
    expect(await guesses()).toBe(0);
    expect((await rowsFor(test.db, ALICE)).RepoEvent).toBe(1);
  });

  it(`race: ten removals ${raceOn(engine, 4)} delete once and append one #account event`, async () => {
    const stores = [store, ...Array.from({ length: 3 }, () => new SqlAccountDeletionStore(test.connect(), 72 * 60 * 60 * 1000))];
    const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => stores[i % 4]!.remove(removal())));
    expect(outcomes.filter((outcome) => outcome.deleted)).toHaveLength(1);
    expect(outcomes.filter((outcome) => !outcome.deleted)).toEqual(Array.from({ length: 9 }, () => ({ deleted: false, reason: "code-gone" })));
    const events = await rowsOf<{ type: string }>(test.db, sql`SELECT "type" FROM "RepoEvent" WHERE "did" = ${ALICE}`);
    expect(events).toEqual([{ type: "account" }]);
  });

  it(`race: forty checks ${raceOn(engine, 4)} compare at most ${MAX}`, async () => {
    const stores = [store, ...Array.from({ length: 3 }, () => new SqlAccountDeletionStore(test.connect(), 72 * 60 * 60 * 1000))];
    const outcomes = await Promise.all(Array.from({ length: 40 }, (_, i) => guess(`wrong-${i}`, stores[i % 4])));
    expect(outcomes.filter((outcome) => outcome === "wrong")).toHaveLength(MAX);
    expect(await guesses()).toBe(MAX);
  });
});
