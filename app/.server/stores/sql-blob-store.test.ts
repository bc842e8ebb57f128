import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, execute, rowOf, rowsOf, raceOn } from "../../../tests/helpers/databases.ts";
import { raceAgainstGatedTransaction, raceAgainstHeldWrite, untilASessionWaitsForALock } from "../../../tests/helpers/postgres.ts";
import { postgresPlan, sqlitePlan } from "../../../tests/helpers/query-plans.ts";
import { countOf, countRows, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import type { PostgresDatabase } from "../db/postgres-database.ts";
import { at, sql, type Database } from "../db/sql.ts";
import type { SqliteDatabase } from "../db/sqlite-database.ts";
import type { NewBlob, PutBlobOutcome } from "../blobs/blob-store.ts";
import { rawCid } from "../repo/identifiers.ts";
import { RepoError, type WriteRequest } from "../repo/repo-writer.ts";
import { accountWithRepository, repositoriesOn } from "../../../tests/helpers/repositories.ts";
import { BLOB_CLEANUP_BATCH, BLOB_SQL, SqlBlobStore, type BlobLimits } from "./sql-blob-store.ts";

/**
 * docs/decisions/0008: the per-account blob quota is one atomic step, and blobs no record references are deleted
 * lazily after a grace period. Several handles on one database (SQLite connections, PostgreSQL pools) stand for
 * several server processes; the clock is an argument.
 */
const SIZE = 1000;
const QUOTA = 3 * SIZE;
const GRACE = 60_000;
const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
/** A collection this server has no lexicon for: these tests are about the repository, not about records checked against their lexicons (record-lexicons.test.ts). */
const NOTE = "com.example.note";

type TestBlob = Omit<NewBlob, "contentKey"> & { bytes: Uint8Array };

/** Distinct bytes per `seed`: a blob of its own CID. */
function blob(seed: number, size = SIZE): TestBlob {
  const bytes = new Uint8Array(size).fill(seed % 256);
  bytes[0] = Math.floor(seed / 256);
  return { cid: rawCid(bytes), declaredType: "application/octet-stream", mimeType: "application/octet-stream", size, bytes };
}

/**
 * An upload as the store sees it (blobs/blobs.ts): a copy registered as being written, then the one atomic step. The
 * copy's bytes are the content store's business (sql-blob-chunks.test.ts, blobs.test.ts), not these tests'.
 */
async function putBlob(store: SqlBlobStore, did: string, { bytes: _bytes, ...upload }: TestBlob, now: number): Promise<PutBlobOutcome> {
  const contentKey = await store.beginWrite(now);
  return store.putBlob(did, { ...upload, contentKey }, now);
}

const blobRef = (cid: string) => ({ $type: "blob", ref: { $link: cid }, mimeType: "application/octet-stream", size: SIZE });
const post = (rkey: string, ...cids: string[]): WriteRequest => ({ action: "create", collection: NOTE, rkey, value: { $type: NOTE, text: rkey, images: cids.map(blobRef) } });
const put = (rkey: string, ...cids: string[]): WriteRequest => ({ ...post(rkey, ...cids), action: "update" }) as WriteRequest;
const del = (rkey: string): WriteRequest => ({ action: "delete", collection: NOTE, rkey });

/** Record writes of one process as commits (docs/decisions/0027) at the test's time; a refusal's XRPC name, or undefined. */
function recordWriter(db: Database, graceMs: number) {
  const clock = { now: 0 };
  const { writer } = repositoriesOn(db, clock, { blobGraceMs: graceMs, eventRetentionMs: 3600_000 });
  return {
    async applyWrites(did: string, writes: WriteRequest[], now: number): Promise<{ kind: string } | undefined> {
      clock.now = now;
      try {
        await writer.write(did, writes);
        return undefined;
      } catch (error) {
        if (error instanceof RepoError) return { kind: error.code };
        throw error;
      }
    },
  };
}

describe.each(ENGINES)("SqlBlobStore and SqlRepoStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  let now: number;

  type Side = { db: Database; blobs: SqlBlobStore; repo: ReturnType<typeof recordWriter> };

  /** The stores of one server process: the `process`-th handle on the database (0: the suite's own). */
  function open(limits: BlobLimits = { quotaBytes: QUOTA, unreferencedGraceMs: GRACE }, process = 0): Side {
    const db = process === 0 ? shared.db : shared.others(process)[process - 1]!;
    return { db, blobs: new SqlBlobStore(db, limits), repo: recordWriter(db, limits.unreferencedGraceMs) };
  }

  const stored = async (side: Side, did = ALICE) => (await rowsOf<{ cid: string }>(side.db, sql`SELECT "cid" FROM "Blob" WHERE "did" = ${did}`)).map((row) => row.cid).sort();
  const unreferencedSince = async (side: Side, cid: string, did = ALICE) =>
    (await rowOf<{ unreferencedSince: number | null }>(side.db, sql`SELECT "unreferencedSince" FROM "Blob" WHERE "did" = ${did} AND "cid" = ${cid}`))?.unreferencedSince;
  const bytesOf = async (did = ALICE) => (await rowOf<{ bytes: number }>(shared.db, sql`SELECT COALESCE(SUM("size"), 0) AS "bytes" FROM "Blob" WHERE "did" = ${did}`))!.bytes;

  beforeEach(async () => {
    now = 1_800_000_000_000;
    for (const did of [ALICE, BOB]) await accountWithRepository(shared.db, did, { now });
  });

  describe("blob quota: one atomic step per upload", () => {
    it("stores blobs up to the quota, then refuses with the numbers and writes nothing", async () => {
      const side = open();
      for (let seed = 1; seed <= 3; seed++) expect((await putBlob(side.blobs, ALICE, blob(seed), now)).kind).toBe("stored");
      expect(await putBlob(side.blobs, ALICE, blob(4), now)).toEqual({ kind: "over-quota", size: SIZE, usedBytes: QUOTA, quotaBytes: QUOTA });
      expect(await stored(side)).toHaveLength(3);
    });

    it("a blob that would overshoot by one byte is refused; one that fits exactly is stored", async () => {
      const { blobs } = open();
      expect((await putBlob(blobs, ALICE, blob(1, QUOTA - 10), now)).kind).toBe("stored");
      expect(await putBlob(blobs, ALICE, blob(2, 11), now)).toMatchObject({ kind: "over-quota", usedBytes: QUOTA - 10 });
      expect((await putBlob(blobs, ALICE, blob(3, 10), now)).kind).toBe("stored");
    });

    it("re-uploading a blob the account already has costs nothing, even at the quota", async () => {
      const side = open();
      for (let seed = 1; seed <= 3; seed++) await putBlob(side.blobs, ALICE, blob(seed), now);
      expect(await putBlob(side.blobs, ALICE, blob(2), now)).toEqual({ kind: "stored", blob: { cid: blob(2).cid, mimeType: "application/octet-stream", size: SIZE }, copy: "spare" });
      expect(await stored(side)).toHaveLength(3);
    });

    it("quotas are per account", async () => {
      const side = open();
      for (let seed = 1; seed <= 3; seed++) await putBlob(side.blobs, ALICE, blob(seed), now);
      expect((await putBlob(side.blobs, BOB, blob(1), now)).kind).toBe("stored");
      expect((await putBlob(side.blobs, ALICE, blob(9), now)).kind).toBe("over-quota");
    });

    it("the upload's copy becomes its CID's copy; the row keeps the size and no bytes (docs/decisions/0043)", async () => {
      const side = open();
      const image = blob(7, 300);
      const contentKey = await side.blobs.beginWrite(now);
      const { bytes: _bytes, ...upload } = image;
      expect(await side.blobs.putBlob(ALICE, { ...upload, contentKey }, now)).toMatchObject({ kind: "stored", copy: "kept" });
      const row = await rowOf<{ bytes: Uint8Array; size: number }>(side.db, sql`SELECT "bytes", "size" FROM "Blob" WHERE "did" = ${ALICE} AND "cid" = ${image.cid}`);
      expect({ bytes: row!.bytes.length, size: row!.size }).toEqual({ bytes: 0, size: 300 });
      expect(await rowsOf(side.db, sql`SELECT "key", "cid", "state", "dueAt" FROM "BlobContent"`)).toEqual([{ key: contentKey, cid: image.cid, state: "stored", dueAt: null }]);
    });

    it("two handles on one database share one quota: alternating uploads stop at it", async () => {
      const [first, second] = [open(undefined, 1), open(undefined, 2)];
      const outcomes = [];
      for (let i = 0; i < 12; i++) outcomes.push((await putBlob((i % 2 ? second : first).blobs, ALICE, blob(i + 1), now)).kind);
      expect(outcomes.filter((kind) => kind === "stored")).toHaveLength(3);
      expect(await bytesOf()).toBeLessThanOrEqual(QUOTA);
    });

    it(`RACE: 20 uploads ${raceOn(engine, 4)} never exceed the quota`, async () => {
      const sides = [1, 2, 3, 4].map((process) => open(undefined, process));
      const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => putBlob(sides[i % 4]!.blobs, ALICE, blob(100 + i), now)));
      expect(outcomes.filter((outcome) => outcome.kind === "stored")).toHaveLength(3);
      expect(await bytesOf()).toBe(QUOTA);
      // Every refusal saw the full quota used: none read a sum another upload was about to change.
      for (const outcome of outcomes) if (outcome.kind === "over-quota") expect(outcome.usedBytes).toBe(QUOTA);
    });

    it(`RACE: 20 uploads of the same blob ${raceOn(engine, 4)} store it once, and none fails`, async () => {
      const sides = [1, 2, 3, 4].map((process) => open(undefined, process));
      const image = blob(42);
      const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => putBlob(sides[i % 4]!.blobs, ALICE, image, now)));
      expect(outcomes.every((outcome) => outcome.kind === "stored")).toBe(true);
      expect(await stored(open())).toEqual([image.cid]);
      expect(await bytesOf()).toBe(SIZE);
    });

    it(`RACE: records naming blobs and the blobs' uploads ${raceOn(engine, 2)}: every blob ends up referenced`, async () => {
      const [writer, uploader] = [open(undefined, 1), open({ quotaBytes: 100 * SIZE, unreferencedGraceMs: GRACE }, 2)];
      const images = Array.from({ length: 10 }, (_, i) => blob(200 + i));
      await Promise.all(
        images.flatMap((image, i) => [writer.repo.applyWrites(ALICE, [post(`p${i}`, image.cid)], now), putBlob(uploader.blobs, ALICE, image, now)]),
      );
      // docs/decisions/0008's invariant: unreferencedSince is null exactly when a record names the blob.
      for (const image of images) expect({ cid: image.cid, since: await unreferencedSince(writer, image.cid) }).toEqual({ cid: image.cid, since: null });
    });

    it("the sum is read under the account's lock: while another process holds it, an upload waits instead of reading a stale sum", async () => {
      if (engine === "sqlite") {
        // SQLite: the lock is the file's write lock, taken by BEGIN IMMEDIATE.
        const [holder, uploader] = [open(undefined, 1), open(undefined, 2)];
        const holding = (holder.db as SqliteDatabase).connection;
        const waiting = (uploader.db as SqliteDatabase).connection;
        waiting.pragma("busy_timeout = 0");
        try {
          holding.exec("BEGIN IMMEDIATE");
          for (let seed = 1; seed <= 3; seed++) {
            const { cid, bytes } = blob(seed);
            holding
              .prepare(`INSERT INTO "Blob" (did, cid, declaredType, mimeType, size, bytes, createdAt, unreferencedSince) VALUES (?, ?, 'x', 'x', ?, ?, ?, ?)`)
              .run(ALICE, cid, SIZE, Buffer.from(bytes), now, now);
          }
          // A deferred transaction would have summed 0 bytes here and inserted once the lock was free.
          await expect(putBlob(uploader.blobs, ALICE, blob(4), now)).rejects.toThrow(/locked|busy/i);
          holding.exec("COMMIT");
        } finally {
          if (holding.inTransaction) holding.exec("ROLLBACK");
          waiting.pragma("busy_timeout = 5000");
        }
        expect(await putBlob(uploader.blobs, ALICE, blob(4), now)).toEqual({ kind: "over-quota", size: SIZE, usedBytes: QUOTA, quotaBytes: QUOTA });
        return;
      }
      // PostgreSQL: the account's advisory lock (lockAccountData), held here by a transaction that adds blobs.
      const uploader = open(undefined, 2);
      const client = await (shared.others(1)[0] as PostgresDatabase).pool.connect();
      try {
        await client.query("BEGIN");
        await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`account-data:${ALICE}`]);
        for (let seed = 1; seed <= 3; seed++) {
          const { cid, bytes } = blob(seed);
          await client.query(
            `INSERT INTO "Blob" ("did", "cid", "declaredType", "mimeType", "size", "bytes", "createdAt", "unreferencedSince") VALUES ($1, $2, 'x', 'x', $3, $4, $5, $5)`,
            [ALICE, cid, SIZE, Buffer.from(bytes), new Date(now).toISOString()],
          );
        }
        let settled = false;
        const upload = putBlob(uploader.blobs, ALICE, blob(4), now).finally(() => (settled = true));
        // Until the upload is seen waiting for the lock (or, were it not taking the lock, has finished).
        await untilASessionWaitsForALock(client, () => settled);
        expect(settled).toBe(false);
        await client.query("COMMIT");
        expect(await upload).toEqual({ kind: "over-quota", size: SIZE, usedBytes: QUOTA, quotaBytes: QUOTA });
      } finally {
        await client.query("ROLLBACK");
        client.release();
      }
    });

    it("sums the account's bytes from an index alone, never reading blob contents", async () => {
      if (engine === "sqlite") {
        expect(sqlitePlan(shared.db, BLOB_SQL.bytesOfAccount, ALICE)).toEqual([
          expect.stringMatching(/^SEARCH Blob USING COVERING INDEX Blob_did_unreferencedSince_size_idx \(did=\?\)$/),
        ]);
        return;
      }
      // The account's rows are found through the index on (did, unreferencedSince, size)...
      const plan = await postgresPlan(shared.db, BLOB_SQL.bytesOfAccount, [ALICE]);
      expect(plan).toContainEqual(expect.objectContaining({ index: "Blob_did_unreferencedSince_size_idx", indexCond: expect.stringMatching(/did = /) }));
      expect(plan.filter((node) => node.nodeType === "Seq Scan")).toEqual([]);
      // ...which holds every column the sum needs: the planner can answer from it alone (an index-only scan), once
      // the table's pages are known all-visible; without that knowledge, on a fresh table, it may prefer a bitmap scan.
      const scans = (await postgresPlan(shared.db, BLOB_SQL.bytesOfAccount, [ALICE], { off: ["enable_bitmapscan"] })).filter((node) => node.nodeType.includes("Scan"));
      expect(scans).toEqual([expect.objectContaining({ nodeType: "Index Only Scan", relation: "Blob", index: "Blob_did_unreferencedSince_size_idx" })]);
    });
  });

  describe("unreferenced blobs: deleted lazily after the grace period", () => {
    it("an unreferenced blob stays through its grace period and goes with the first upload after it", async () => {
      const side = open();
      const orphan = blob(1);
      await putBlob(side.blobs, ALICE, orphan, now);
      expect(await unreferencedSince(side, orphan.cid)).toBe(now);
      now += GRACE - 1;
      await putBlob(side.blobs, BOB, blob(2), now);
      expect(await stored(side)).toEqual([orphan.cid]);
      now += 1;
      await putBlob(side.blobs, BOB, blob(3), now);
      expect(await stored(side)).toEqual([]);
    });

    it("a record write also removes expired blobs, of any account", async () => {
      const side = open();
      await putBlob(side.blobs, BOB, blob(1), now);
      now += GRACE;
      await side.repo.applyWrites(ALICE, [post("p1")], now);
      expect(await stored(side, BOB)).toEqual([]);
    });

    it("a blob a record references survives the grace period", async () => {
      const side = open();
      const image = blob(1);
      await putBlob(side.blobs, ALICE, image, now);
      await side.repo.applyWrites(ALICE, [post("p1", image.cid)], now + 1);
      expect(await unreferencedSince(side, image.cid)).toBeNull();
      now += 10 * GRACE;
      await putBlob(side.blobs, ALICE, blob(2), now);
      expect(await stored(side)).toContain(image.cid);
    });

    it("deleting the record starts the blob's grace period", async () => {
      const side = open();
      const image = blob(1);
      await putBlob(side.blobs, ALICE, image, now);
      await side.repo.applyWrites(ALICE, [post("p1", image.cid)], now);
      now += 5 * GRACE;
      await side.repo.applyWrites(ALICE, [del("p1")], now);
      expect(await unreferencedSince(side, image.cid)).toBe(now);
      now += GRACE - 1;
      await putBlob(side.blobs, BOB, blob(2), now);
      expect(await stored(side)).toEqual([image.cid]);
      now += 1;
      await putBlob(side.blobs, BOB, blob(3), now);
      expect(await stored(side)).toEqual([]);
    });

    it("updating the record away from the blob starts its grace; the blob it now references loses its own", async () => {
      const side = open();
      const [before, after] = [blob(1), blob(2)];
      await putBlob(side.blobs, ALICE, before, now);
      await putBlob(side.blobs, ALICE, after, now);
      await side.repo.applyWrites(ALICE, [post("p1", before.cid)], now);
      now += 1000;
      await side.repo.applyWrites(ALICE, [put("p1", after.cid)], now);
      expect(await unreferencedSince(side, before.cid)).toBe(now);
      expect(await unreferencedSince(side, after.cid)).toBeNull();
    });

    it("a blob referenced by two records survives deletion of one, and starts its grace with the other", async () => {
      const side = open();
      const image = blob(1);
      await putBlob(side.blobs, ALICE, image, now);
      await side.repo.applyWrites(ALICE, [post("p1", image.cid), post("p2", image.cid)], now);
      await side.repo.applyWrites(ALICE, [del("p1")], now);
      expect(await unreferencedSince(side, image.cid)).toBeNull();
      now += 2 * GRACE;
      await side.repo.applyWrites(ALICE, [del("p2")], now);
      expect(await unreferencedSince(side, image.cid)).toBe(now);
    });

    it("within one applyWrites batch, a reference moved from a deleted record to a new one keeps the blob referenced", async () => {
      const side = open();
      const image = blob(1);
      await putBlob(side.blobs, ALICE, image, now);
      await side.repo.applyWrites(ALICE, [post("p1", image.cid)], now);
      await side.repo.applyWrites(ALICE, [del("p1"), post("p2", image.cid)], now + 1);
      expect(await unreferencedSince(side, image.cid)).toBeNull();
    });

    it("a batch that fails on a conflict changes no reference", async () => {
      const side = open();
      const image = blob(1);
      await putBlob(side.blobs, ALICE, image, now);
      await side.repo.applyWrites(ALICE, [post("p1")], now);
      expect(await side.repo.applyWrites(ALICE, [post("p2", image.cid), post("p1")], now)).toMatchObject({ kind: "RecordAlreadyExists" });
      expect(await unreferencedSince(side, image.cid)).toBe(now);
      expect(await countRows(side.db, "RecordBlob")).toBe(0);
    });

    it("a blob uploaded after a record already names its CID starts out referenced", async () => {
      const side = open();
      const image = blob(1);
      await side.repo.applyWrites(ALICE, [post("p1", image.cid)], now);
      await putBlob(side.blobs, ALICE, image, now);
      expect(await unreferencedSince(side, image.cid)).toBeNull();
    });

    it("uploading an unreferenced blob again restarts its grace period", async () => {
      const side = open();
      const image = blob(1);
      await putBlob(side.blobs, ALICE, image, now);
      now += GRACE - 1;
      await putBlob(side.blobs, ALICE, image, now);
      expect(await unreferencedSince(side, image.cid)).toBe(now);
    });

    it("the account's own expired blobs are removed before its quota is checked, however many there are", async () => {
      const side = open({ quotaBytes: 100 * SIZE, unreferencedGraceMs: GRACE });
      for (let seed = 1; seed <= 100; seed++) await putBlob(side.blobs, ALICE, blob(seed), now);
      now += GRACE;
      expect((await putBlob(side.blobs, ALICE, blob(500), now)).kind).toBe("stored");
      expect(await stored(side)).toEqual([blob(500).cid]);
    });

    it("other accounts' expired blobs go in small batches, so one request's work stays bounded", async () => {
      const side = open({ quotaBytes: 100 * SIZE, unreferencedGraceMs: GRACE });
      for (let seed = 1; seed <= 12; seed++) await putBlob(side.blobs, BOB, blob(seed), now);
      now += GRACE;
      await putBlob(side.blobs, ALICE, blob(100), now);
      expect(await stored(side, BOB)).toHaveLength(12 - BLOB_CLEANUP_BATCH);
      // The record writer's first commit: its process's cleanup gate is due (docs/decisions/0037, amendment).
      await side.repo.applyWrites(ALICE, [post("p1")], now);
      expect(await stored(side, BOB)).toHaveLength(12 - 2 * BLOB_CLEANUP_BATCH);
    });

    it("references go with their record when the account is deleted", async () => {
      const side = open();
      const image = blob(1);
      await putBlob(side.blobs, ALICE, image, now);
      await side.repo.applyWrites(ALICE, [post("p1", image.cid)], now);
      await execute(side.db, sql`DELETE FROM "Account" WHERE "did" = ${ALICE}`);
      expect(await countRows(side.db, "RecordBlob")).toBe(0);
      expect(await stored(side)).toEqual([]);
    });

    it("times round-trip as epoch milliseconds on both engines", async () => {
      const side = open();
      await putBlob(side.blobs, ALICE, blob(1), now + 123);
      expect(await countOf(side.db, sql`SELECT COUNT(*) AS "n" FROM "Blob" WHERE "unreferencedSince" = ${at(now + 123)} AND "createdAt" = ${at(now + 123)}`)).toBe(1);
      expect(await unreferencedSince(side, blob(1).cid)).toBe(now + 123);
    });
  });
});

/**
 * docs/decisions/0040: an upload's cleanup removes other accounts' expired blobs, under its own account's lock only. A
 * record write that references such a blob again (under the blob's account's lock) must keep it: on PostgreSQL the
 * cleanup's DELETE waits for that write's row lock and then re-checks only its own WHERE, so the blob's expiry is tested
 * there too; were it tested only in the subquery that picked the batch, the record would name a deleted blob.
 */
describe("SqlBlobStore on postgresql: a cleanup racing a record that references the blob again", () => {
  const shared = useSharedDatabase("postgresql");
  const T = 1_800_000_000_000;

  it("RACE (two connections): the blob stays while another account's upload waits to delete it", async () => {
    for (const did of [ALICE, BOB]) await accountWithRepository(shared.db, did, { now: T });
    const blobs = new SqlBlobStore(shared.db, { quotaBytes: QUOTA, unreferencedGraceMs: GRACE });
    const image = blob(1);
    await putBlob(blobs, ALICE, image, T);
    const upload = await raceAgainstHeldWrite(
      shared.others(1)[0] as PostgresDatabase,
      // Past Alice's grace period, a record write of hers names the blob again, not yet committed: the step of
      // recordBlobReferences that takes the blob's row (its record and reference rows do not matter to the race).
      (client) => client.query(`UPDATE "Blob" SET "unreferencedSince" = NULL WHERE "did" = $1 AND "cid" = $2`, [ALICE, image.cid]),
      () => putBlob(blobs, BOB, blob(2), T + GRACE),
    );
    expect(upload.kind).toBe("stored");
    expect(await rowsOf(shared.db, sql`SELECT "cid", "unreferencedSince" FROM "Blob" WHERE "did" = ${ALICE}`)).toEqual([{ cid: image.cid, unreferencedSince: null }]);
  });
});

/**
 * An upload of a blob the account already has, at the end of its grace period, racing another account's upload whose
 * cleanup deletes it. The upload answers "stored" (the record that names it is written next): on SQLite the cleanup
 * went first and the blob is stored again, or the upload went first and its refreshed grace period keeps it. On
 * PostgreSQL the upload reads the row before the cleanup commits and its refresh then waits for the delete: the blob
 * must be stored again, not reported stored while gone.
 */
describe("SqlBlobStore on postgresql: uploading a blob again while another account's cleanup deletes it", () => {
  const shared = useSharedDatabase("postgresql");
  const T = 1_800_000_000_000;

  it("RACE (two connections): the upload that answers stored leaves the blob stored", async () => {
    for (const did of [ALICE, BOB]) await accountWithRepository(shared.db, did, { now: T });
    const limits = { quotaBytes: QUOTA, unreferencedGraceMs: GRACE };
    const blobs = new SqlBlobStore(shared.db, limits);
    const image = blob(1);
    await putBlob(blobs, ALICE, image, T);
    const [bobs, alices] = await raceAgainstGatedTransaction(
      shared.db as PostgresDatabase,
      // Bob's upload once Alice's blob is past its grace period: its cleanup deletes it, and its commit waits at the gate.
      (gated) => putBlob(new SqlBlobStore(gated, limits), BOB, blob(2), T + GRACE),
      // Alice uploads it again a moment before the end of its grace period by her process's clock.
      () => putBlob(blobs, ALICE, image, T + GRACE - 1),
    );
    expect(bobs.kind).toBe("stored");
    expect(alices.kind).toBe("stored");
    expect(await rowsOf(shared.db, sql`SELECT "cid" FROM "Blob" WHERE "did" = ${ALICE}`)).toEqual([{ cid: image.cid }]);
  });
});
