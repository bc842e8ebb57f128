import { describe, expect, it } from "vitest";
import { ENGINES, raceOn, rowsOf } from "../../../tests/helpers/databases.ts";
import { raceAgainstGatedTransaction } from "../../../tests/helpers/postgres.ts";
import { postgresPlan, sqlitePlan } from "../../../tests/helpers/query-plans.ts";
import { countOf, countRows, insertAccount, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import type { PostgresDatabase } from "../db/postgres-database.ts";
import { at, run, sql, type Database } from "../db/sql.ts";
import type { PutBlobOutcome } from "../blobs/blob-store.ts";
import { rawCid } from "../repo/identifiers.ts";
import { accountWithRepository, repositoriesOn } from "../../../tests/helpers/repositories.ts";
import { SqlAccountDeletionStore } from "./sql-account-deletion-store.ts";
import { BLOB_SQL, SqlBlobStore, WRITE_ABANDONED_AFTER_MS, type BlobLimits } from "./sql-blob-store.ts";

/**
 * The register of the blobs' copies (docs/decisions/0043): one stored copy per CID, shared by every account that has
 * the CID; a copy is marked for deletion only once no account has its CID any more, under the CID's lock that every
 * step giving an account the CID takes too; deletions of Blob rows are released in their own transaction, so the
 * sweep never misses one. Several handles on one database stand for several server processes; the clock is an
 * argument. The bytes themselves are the content stores' (blob-content.test.ts); here only the rows.
 */
const SIZE = 100;
const GRACE = 60_000;
const LIMITS: BlobLimits = { quotaBytes: 1000 * SIZE, unreferencedGraceMs: GRACE };
const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
const T = 1_800_000_000_000;

const cidOf = (seed: number) => rawCid(new Uint8Array(SIZE).fill(seed));

async function upload(store: SqlBlobStore, did: string, seed: number, now: number): Promise<PutBlobOutcome & { contentKey: string }> {
  const contentKey = await store.beginWrite(now);
  const blob = { cid: cidOf(seed), declaredType: "application/octet-stream", mimeType: "application/octet-stream", size: SIZE, contentKey };
  return { ...(await store.putBlob(did, blob, now)), contentKey };
}

/** Sweeps until the sweep says nothing is left, forgetting each copy it marked (as Blobs.sweep does after removing its bytes). */
async function sweepAll(store: SqlBlobStore, now: number): Promise<string[]> {
  const doomed: string[] = [];
  for (;;) {
    const batch = await store.sweep(now, 5);
    doomed.push(...batch.doomed);
    await store.forget(batch.doomed);
    if (!batch.more) return doomed;
  }
}

type CopyRow = { key: string; cid: string | null; state: string };
const copies = (db: Database) => rowsOf<CopyRow>(db, sql`SELECT "key", "cid", "state" FROM "BlobContent" ORDER BY "key"`);
const storedCopyOf = async (db: Database, seed: number) => (await copies(db)).find((copy) => copy.cid === cidOf(seed) && copy.state === "stored");
/** Blob rows whose CID has no stored copy: always none. */
const blobsWithoutCopy = (db: Database) =>
  countOf(db, sql`SELECT COUNT(*) AS "n" FROM "Blob" b WHERE NOT EXISTS (SELECT 1 FROM "BlobContent" c WHERE c."cid" = b."cid" AND c."state" = 'stored')`);

describe.each(ENGINES)("the blobs' copies on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const store = () => new SqlBlobStore(shared.db, LIMITS);
  const withAccounts = async () => {
    for (const did of [ALICE, BOB]) await insertAccount(shared.db, did);
  };

  it("a copy is registered as being written before its bytes; the upload's claim makes it its CID's stored copy", async () => {
    await withAccounts();
    const blobs = store();
    const contentKey = await blobs.beginWrite(T);
    expect(await copies(shared.db)).toEqual([{ key: contentKey, cid: null, state: "writing" }]);
    const outcome = await blobs.putBlob(ALICE, { cid: cidOf(1), declaredType: "x/y", mimeType: "x/y", size: SIZE, contentKey }, T);
    expect(outcome).toMatchObject({ kind: "stored", copy: "kept" });
    expect(await copies(shared.db)).toEqual([{ key: contentKey, cid: cidOf(1), state: "stored" }]);
  });

  it("accounts uploading the same bytes share one copy: every later upload's own copy is spare, for its caller to discard", async () => {
    await withAccounts();
    const blobs = store();
    const first = await upload(blobs, ALICE, 1, T);
    const second = await upload(blobs, BOB, 1, T);
    const again = await upload(blobs, ALICE, 1, T);
    expect([first.kind === "stored" && first.copy, second.kind === "stored" && second.copy, again.kind === "stored" && again.copy]).toEqual(["kept", "spare", "spare"]);
    await blobs.endWrite(second.contentKey);
    await blobs.endWrite(again.contentKey);
    expect(await copies(shared.db)).toEqual([{ key: first.contentKey, cid: cidOf(1), state: "stored" }]);
  });

  it("an upload refused by the quota keeps no copy: its row waits, still being written, for its caller to discard it", async () => {
    await withAccounts();
    const blobs = new SqlBlobStore(shared.db, { ...LIMITS, quotaBytes: SIZE });
    await upload(blobs, ALICE, 1, T);
    const refused = await upload(blobs, ALICE, 2, T);
    expect(refused.kind).toBe("over-quota");
    expect((await copies(shared.db)).find((copy) => copy.key === refused.contentKey)).toEqual({ key: refused.contentKey, cid: null, state: "writing" });
    await blobs.endWrite(refused.contentKey);
    expect((await copies(shared.db)).map((copy) => copy.cid)).toEqual([cidOf(1)]);
  });

  it("a copy is marked for deletion once no account has its CID, and not before", async () => {
    await withAccounts();
    const blobs = store();
    const { contentKey } = await upload(blobs, ALICE, 1, T);
    await upload(blobs, BOB, 1, T + GRACE / 2);
    // Alice's blob expires (her next upload deletes it): released, but Bob has the CID.
    await upload(blobs, ALICE, 2, T + GRACE);
    expect(await countRows(shared.db, "BlobRelease")).toBe(1);
    expect(await sweepAll(blobs, T + GRACE)).toEqual([]);
    expect(await countRows(shared.db, "BlobRelease")).toBe(0);
    expect(await storedCopyOf(shared.db, 1)).toMatchObject({ key: contentKey });
    // Then Bob's (and Alice's second one) expire too.
    await upload(blobs, BOB, 3, T + 2 * GRACE);
    const doomed = await sweepAll(blobs, T + 2 * GRACE);
    expect(doomed).toContain(contentKey);
    expect(await storedCopyOf(shared.db, 1)).toBeUndefined();
    expect(await blobsWithoutCopy(shared.db)).toBe(0);
  });

  it("the copy marked for deletion stays marked until it is forgotten: a sweep that stopped before removing its bytes is taken up by the next", async () => {
    await withAccounts();
    const blobs = store();
    const { contentKey } = await upload(blobs, ALICE, 1, T);
    await upload(blobs, ALICE, 2, T + GRACE);
    expect((await blobs.sweep(T + GRACE, 5)).doomed).toEqual([contentKey]);
    // No forget: the process stopped there.
    expect((await blobs.sweep(T + GRACE + 1, 5)).doomed).toEqual([contentKey]);
    await blobs.forget([contentKey]);
    expect((await blobs.sweep(T + GRACE + 2, 5)).doomed).toEqual([]);
    expect((await copies(shared.db)).map((copy) => copy.key)).not.toContain(contentKey);
  });

  it("the same bytes uploaded again while their copy is being deleted get a copy of their own", async () => {
    await withAccounts();
    const blobs = store();
    const first = await upload(blobs, ALICE, 1, T);
    await upload(blobs, ALICE, 2, T + GRACE);
    expect((await blobs.sweep(T + GRACE, 5)).doomed).toEqual([first.contentKey]);
    const again = await upload(blobs, BOB, 1, T + GRACE);
    expect(again).toMatchObject({ kind: "stored", copy: "kept" });
    expect(await storedCopyOf(shared.db, 1)).toMatchObject({ key: again.contentKey });
    expect(await blobsWithoutCopy(shared.db)).toBe(0);
  });

  it(`a write not finished within ${WRITE_ABANDONED_AFTER_MS / 60_000} minutes is taken for abandoned: marked for deletion, and its upload's claim then fails`, async () => {
    await withAccounts();
    const blobs = store();
    const contentKey = await blobs.beginWrite(T);
    expect((await blobs.sweep(T + WRITE_ABANDONED_AFTER_MS - 1, 5)).doomed).toEqual([]);
    expect((await blobs.sweep(T + WRITE_ABANDONED_AFTER_MS, 5)).doomed).toEqual([contentKey]);
    const late = await blobs.putBlob(ALICE, { cid: cidOf(1), declaredType: "x/y", mimeType: "x/y", size: SIZE, contentKey }, T + WRITE_ABANDONED_AFTER_MS);
    expect(late).toEqual({ kind: "abandoned" });
    expect(await countRows(shared.db, "Blob")).toBe(0);
  });

  it("every way a Blob row goes releases it in the same transaction: its own expiry, another account's cleanup, a record write's, the account's deletion", async () => {
    const clock = { now: T };
    for (const did of [ALICE, BOB]) await accountWithRepository(shared.db, did, clock);
    const blobs = store();
    const releasesOf = (did: string) => countOf(shared.db, sql`SELECT COUNT(*) AS "n" FROM "BlobRelease" WHERE "did" = ${did}`);
    for (const seed of [1, 2]) await upload(blobs, ALICE, seed, T);
    await upload(blobs, BOB, 3, T + 1);
    await upload(blobs, BOB, 4, T + 2);
    // Alice's own cleanup, at her next upload (Bob's are not expired yet).
    await upload(blobs, ALICE, 5, T + GRACE);
    expect(await rowsOf(shared.db, sql`SELECT "did", "cid" FROM "BlobRelease" ORDER BY "cid"`)).toEqual([cidOf(1), cidOf(2)].sort().map((cid) => ({ did: ALICE, cid })));
    // Bob's blob 3, by the cleanup of other accounts that Alice's upload runs (the batch is five: it takes the expired one).
    await upload(blobs, ALICE, 6, T + GRACE + 1);
    expect(await releasesOf(BOB)).toBe(1);
    // Bob's blob 4, by the cleanup a record write of Alice's runs (a new writer's first commit is due: docs/decisions/0037).
    clock.now = T + GRACE + 2;
    await repositoriesOn(shared.db, clock, { blobGraceMs: GRACE, eventRetentionMs: 3600_000 }).writer.write(ALICE, [
      { action: "create", collection: "com.example.note", rkey: "p1", value: { $type: "com.example.note", text: "hi" } },
    ]);
    expect(await releasesOf(BOB)).toBe(2);
    // The account's deletion: every blob it still has.
    const remaining = await countOf(shared.db, sql`SELECT COUNT(*) AS "n" FROM "Blob" WHERE "did" = ${ALICE}`);
    expect(remaining).toBe(2);
    expect(await new SqlAccountDeletionStore(shared.db, 3600_000).removeByOperator(ALICE, T + GRACE + 3)).toBeTypeOf("number");
    expect(await releasesOf(ALICE)).toBe(2 + remaining);
    await sweepAll(blobs, T + GRACE + 3);
    expect(await countRows(shared.db, "BlobContent")).toBe(0);
    expect(await countRows(shared.db, "BlobRelease")).toBe(0);
  });

  it(`RACE: two accounts' uploads of the same bytes, expiries and sweeps ${raceOn(engine, 4)}: every blob keeps a stored copy`, async () => {
    await withAccounts();
    const sides = shared.others(4).map((db) => new SqlBlobStore(db, LIMITS));
    const seeds = [11, 12, 13, 14, 15, 16];
    for (const seed of seeds) await upload(sides[0]!, ALICE, seed, T);
    const later = T + GRACE;
    await Promise.all([
      // Alice's next upload deletes and releases all of hers while Bob uploads the same bytes and the sweeps run.
      upload(sides[0]!, ALICE, 99, later),
      ...seeds.map((seed, i) => upload(sides[(i % 3) + 1]!, BOB, seed, later)),
      ...sides.map((side) => side.sweep(later, 5)),
      ...sides.map((side) => side.sweep(later, 5)),
    ]);
    await sweepAll(sides[0]!, later);
    expect(await blobsWithoutCopy(shared.db)).toBe(0);
    for (const seed of seeds) expect(await storedCopyOf(shared.db, seed), `seed ${seed}`).toBeDefined();
  });

  it("the sweep finds its work through indexes: releases by their key, copies by CID and by due time, Blob rows by CID", async () => {
    if (engine === "sqlite") {
      expect(sqlitePlan(shared.db, BLOB_SQL.releases, 5)).toEqual([expect.stringMatching(/^SCAN BlobRelease USING (COVERING )?INDEX sqlite_autoindex_BlobRelease_1$/)]);
      expect(sqlitePlan(shared.db, BLOB_SQL.doomUnused, 0, "c", "c")).toEqual([
        expect.stringMatching(/^SEARCH BlobContent USING INDEX BlobContent_cid_key \(cid=\?\)$/),
        expect.stringMatching(/^CORRELATED SCALAR SUBQUERY|^SCALAR SUBQUERY/),
        expect.stringMatching(/^SEARCH Blob USING COVERING INDEX Blob_cid_idx \(cid=\?\)$/),
      ]);
      expect(sqlitePlan(shared.db, BLOB_SQL.due, 0, 5)).toEqual([expect.stringMatching(/^SEARCH BlobContent USING INDEX BlobContent_dueAt_idx \(dueAt<\?\)$/)]);
      return;
    }
    const time = new Date(T).toISOString();
    const plans = {
      releases: await postgresPlan(shared.db, BLOB_SQL.releases, [5]),
      doomUnused: await postgresPlan(shared.db, BLOB_SQL.doomUnused, [time, "c", "c"]),
      due: await postgresPlan(shared.db, BLOB_SQL.due, [time, 5]),
    };
    expect(plans.releases).toContainEqual(expect.objectContaining({ index: "BlobRelease_pkey" }));
    expect(plans.doomUnused).toContainEqual(expect.objectContaining({ index: "BlobContent_cid_key" }));
    expect(plans.doomUnused).toContainEqual(expect.objectContaining({ index: "Blob_cid_idx" }));
    expect(plans.due).toContainEqual(expect.objectContaining({ index: "BlobContent_dueAt_idx" }));
    for (const plan of Object.values(plans)) expect(plan.filter((node) => node.nodeType === "Seq Scan")).toEqual([]);
  });
});

/**
 * Steps on one CID meeting on PostgreSQL, each order forced by holding the first one's transaction open at its commit:
 * an upload and the sweep that deletes the CID's copy, both ways, and two legacy rows of the same bytes moved at once.
 * Without the CID's lock in each, the sweep would mark the copy an account was just given, an upload would rely on a
 * copy being deleted, or both moves would claim a copy for the CID.
 */
describe("the blobs' copies on postgresql: steps on the same CID at once", () => {
  const shared = useSharedDatabase("postgresql");

  async function releasedCopy(): Promise<string> {
    for (const did of [ALICE, BOB]) await insertAccount(shared.db, did);
    const blobs = new SqlBlobStore(shared.db, LIMITS);
    const { contentKey } = await upload(blobs, ALICE, 1, T);
    // Alice's next upload, past the grace period, deletes her blob 1 and releases it; its copy is still stored.
    await upload(blobs, ALICE, 2, T + GRACE);
    return contentKey;
  }

  it("RACE (two connections): an upload that gave an account the CID first keeps the copy the sweep then finds in use", async () => {
    const alicesCopy = await releasedCopy();
    const sweeper = new SqlBlobStore(shared.others(1)[0]!, LIMITS);
    const [bobs, swept] = await raceAgainstGatedTransaction(
      shared.db as PostgresDatabase,
      (gated) => upload(new SqlBlobStore(gated, LIMITS), BOB, 1, T + GRACE),
      () => sweeper.sweep(T + GRACE, 5),
    );
    expect(bobs).toMatchObject({ kind: "stored", copy: "spare" });
    expect(swept.doomed).toEqual([]);
    expect(await storedCopyOf(shared.db, 1)).toMatchObject({ key: alicesCopy });
    expect(await blobsWithoutCopy(shared.db)).toBe(0);
  });

  it("RACE (two connections): an upload that comes after the sweep marked the copy stores its own", async () => {
    const alicesCopy = await releasedCopy();
    const uploader = new SqlBlobStore(shared.others(1)[0]!, LIMITS);
    const [swept, bobs] = await raceAgainstGatedTransaction(
      shared.db as PostgresDatabase,
      (gated) => new SqlBlobStore(gated, LIMITS).sweep(T + GRACE, 5),
      () => upload(uploader, BOB, 1, T + GRACE),
    );
    expect(swept.doomed).toEqual([alicesCopy]);
    expect(bobs).toMatchObject({ kind: "stored", copy: "kept" });
    expect(await storedCopyOf(shared.db, 1)).toMatchObject({ key: bobs.contentKey });
    expect(await blobsWithoutCopy(shared.db)).toBe(0);
  });

  it("RACE (two connections): two accounts' rows of the same bytes moved out of their rows at once keep one copy", async () => {
    for (const did of [ALICE, BOB]) await insertAccount(shared.db, did);
    const bytes = new Uint8Array(SIZE).fill(1);
    for (const did of [ALICE, BOB]) {
      await shared.db.execute(() =>
        run(sql`INSERT INTO "Blob" ("did", "cid", "declaredType", "mimeType", "size", "bytes", "createdAt", "unreferencedSince")
          VALUES (${did}, ${cidOf(1)}, 'x/y', 'x/y', ${SIZE}, ${bytes}, ${at(T)}, NULL)`),
      );
    }
    const [alices, bobs] = [new SqlBlobStore(shared.db, LIMITS), new SqlBlobStore(shared.others(1)[0]!, LIMITS)];
    const [aliceKey, bobKey] = [await alices.beginWrite(T), await bobs.beginWrite(T)];
    const outcomes = await raceAgainstGatedTransaction(
      shared.db as PostgresDatabase,
      (gated) => new SqlBlobStore(gated, LIMITS).adoptLegacy({ did: ALICE, cid: cidOf(1) }, aliceKey),
      () => bobs.adoptLegacy({ did: BOB, cid: cidOf(1) }, bobKey),
    );
    expect(outcomes).toEqual(["kept", "spare"]);
    expect(await storedCopyOf(shared.db, 1)).toMatchObject({ key: aliceKey });
    expect(await blobsWithoutCopy(shared.db)).toBe(0);
  });
});
