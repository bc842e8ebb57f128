import { shape } from "../db/row-shape.ts";
import { tables } from "../db/rows.generated.ts";
import { all, at, get, run, send, sql, statementOf, type Database, type Program } from "../db/sql.ts";
import type { BlobStore, LegacyBlob, NewBlob, PutBlobOutcome, ServableBlob, SweepBatch } from "../blobs/blob-store.ts";
import { randomBytes } from "node:crypto";
import { HOUR } from "../util/time.ts";
import { deleteExpiredSql } from "./expired-rows.ts";
import { lockAccountData, lockBlobContent } from "./locks.ts";

export type BlobLimits = {
  /** Most bytes of blobs one account may store, unreferenced ones in their grace period included. */
  quotaBytes: number;
  /** How long a blob may stay unreferenced before it is deleted. */
  unreferencedGraceMs: number;
};

/**
 * Expired unreferenced blobs removed per upload, or per record write on which its process's cleanup gate is due (one
 * in SqlRepoStore's COMMITS_PER_CLEANUP: docs/decisions/0037, amendment), across all accounts. Each may be
 * ATRIUM_BLOB_MAX_BYTES, so the batch stays small; more than one, so removal outpaces the one blob an upload adds
 * (the lazy-expiry convention of expired-rows.ts).
 */
export const BLOB_CLEANUP_BATCH = 5;

/**
 * How long a copy may stay "writing" before a sweep takes it for abandoned and deletes its bytes (docs/decisions/0043):
 * an upload is cut off after ATRIUM_REQUEST_TIMEOUT_SECONDS (at most 600), so an hour leaves every live upload alone,
 * clocks of several machines a little apart included, and still bounds what a crash mid-upload leaves behind.
 */
export const WRITE_ABANDONED_AFTER_MS = HOUR;

/** The `bytes` column of every row since docs/decisions/0043: the bytes are in the content store. */
const NO_BYTES = new Uint8Array(0);

/**
 * The SQL of the steps whose plans are tested (expired-rows.test.ts, sql-blob-store.test.ts): the cleanups and the
 * sweep must search an index, and the quota's sum must read an index alone, never the blobs' rows. The programs run
 * these texts.
 */
export const BLOB_SQL = {
  deleteExpired: `${deleteExpiredSql("Blob", ["did", "cid"], "unreferencedSince", BLOB_CLEANUP_BATCH)} RETURNING "did", "cid"`,
  deleteExpiredOfAccount: `DELETE FROM "Blob" WHERE "did" = ? AND "unreferencedSince" <= ? RETURNING "cid"`,
  bytesOfAccount: `SELECT COALESCE(SUM("size"), 0) AS "bytes" FROM "Blob" WHERE "did" = ?`,
  /** The oldest releases, in the order of their primary key. */
  releases: `SELECT "releasedAt", "did", "cid" FROM "BlobRelease" ORDER BY "releasedAt", "did", "cid" LIMIT ?`,
  /** A CID's stored copy, marked for deletion if no account has that CID any more (searched by Blob(cid)). */
  doomUnused: `UPDATE "BlobContent" SET "state" = 'deleting', "cid" = NULL, "dueAt" = ?
    WHERE "cid" = ? AND NOT EXISTS (SELECT 1 FROM "Blob" WHERE "cid" = ?)`,
  /** Copies whose time has come: abandoned writes and copies marked for deletion (BlobContent(dueAt)). */
  due: `SELECT "key", "state" FROM "BlobContent" WHERE "dueAt" <= ? ORDER BY "dueAt" LIMIT ?`,
};

const deleteExpired = statementOf(BLOB_SQL.deleteExpired);
const deleteExpiredOfAccount = statementOf(BLOB_SQL.deleteExpiredOfAccount);
const bytesOfAccount = statementOf(BLOB_SQL.bytesOfAccount);
const releases = statementOf(BLOB_SQL.releases);
const doomUnused = statementOf(BLOB_SQL.doomUnused);
const due = statementOf(BLOB_SQL.due);
const BYTES_OF_ACCOUNT_ROW = shape({ bytes: "integer" });
/** The row of an existence check. */
const ONE = shape({ one: "integer" });
const SERVABLE_ROW = shape({ mimeType: "string", size: "integer", contentKey: "string" });
const RELEASE_ROW = tables.BlobRelease.pick("releasedAt", "did", "cid");
const DID_CID = tables.Blob.pick("did", "cid");

/** The blob CIDs one record references now: read before writing it (deleting a record cascades to its rows). */
export function* blobReferencesOf(did: string, collection: string, rkey: string): Program<string[]> {
  const rows = yield* all(tables.RecordBlob.pick("blobCid"), sql`SELECT "blobCid" FROM "RecordBlob" WHERE "did" = ${did} AND "collection" = ${collection} AND "rkey" = ${rkey}`);
  return rows.map((row) => row.blobCid);
}

/**
 * After a record write: its references were `previous` and are now `cids` (none after a delete). Blobs it now
 * references stop being unreferenced; blobs it no longer references, and no other record of the account does, start
 * their grace period. A step of the record write's transaction (SqlRepoStore.applyWrites), after lockAccountData.
 */
export function* recordBlobReferences(did: string, collection: string, rkey: string, previous: readonly string[], cids: readonly string[], now: number): Program<void> {
  if (previous.length === 0 && cids.length === 0) return;
  if (previous.length > 0) yield* send(sql`DELETE FROM "RecordBlob" WHERE "did" = ${did} AND "collection" = ${collection} AND "rkey" = ${rkey}`);
  for (const cid of cids) {
    yield* send(sql`INSERT INTO "RecordBlob" ("did", "collection", "rkey", "blobCid") VALUES (${did}, ${collection}, ${rkey}, ${cid}) ON CONFLICT DO NOTHING`);
    yield* send(sql`UPDATE "Blob" SET "unreferencedSince" = NULL WHERE "did" = ${did} AND "cid" = ${cid} AND "unreferencedSince" IS NOT NULL`);
  }
  const kept = new Set(cids);
  for (const cid of previous) {
    if (kept.has(cid)) continue;
    yield* send(sql`UPDATE "Blob" SET "unreferencedSince" = ${at(now)}
      WHERE "did" = ${did} AND "cid" = ${cid} AND "unreferencedSince" IS NULL
        AND NOT EXISTS (SELECT 1 FROM "RecordBlob" WHERE "did" = ${did} AND "blobCid" = ${cid})`);
  }
}

/**
 * Records that these Blob rows were deleted, in the transaction that deleted them (docs/decisions/0043): a later sweep
 * deletes each CID's copy if no account has the CID by then. A release is never updated, only inserted and deleted,
 * so a sweep cannot lose one written meanwhile.
 */
function* release(rows: ReadonlyArray<{ did: string; cid: string }>, now: number): Program<void> {
  for (const row of rows) {
    yield* send(sql`INSERT INTO "BlobRelease" ("releasedAt", "did", "cid") VALUES (${at(now)}, ${row.did}, ${row.cid}) ON CONFLICT DO NOTHING`);
  }
}

/** Deletes a small batch of blobs, of any account, unreferenced for longer than the grace period, and releases them. */
export function* removeExpiredBlobs(now: number, graceMs: number): Program<void> {
  const cutoff = at(now - graceMs);
  yield* release(yield* all(DID_CID, deleteExpired(cutoff, cutoff)), now);
}

/**
 * Before an account's rows go (its deletion, whose cascade removes its Blob rows): releases every blob of the account
 * in the same transaction, so that the sweeps that follow delete the copies no other account has.
 */
export function* releaseBlobsOfAccount(did: string, now: number): Program<void> {
  yield* run(sql`INSERT INTO "BlobRelease" ("releasedAt", "did", "cid") SELECT ${at(now)}, "did", "cid" FROM "Blob" WHERE "did" = ${did} ON CONFLICT DO NOTHING`);
}

/**
 * Blobs and the record→blob references (docs/decisions/0008), and the register of their bytes' copies
 * (docs/decisions/0043).
 *
 * Invariants: a blob's `unreferencedSince` is null exactly when some RecordBlob row of its account names its CID
 * (uploads set it from that table; record writes keep it as records gain and lose references; both take the account's
 * data lock first, so the quota sum and the insert it allows cannot interleave with another upload or record write
 * of the account, in this process or another). A Blob row exists only while its CID has a stored copy: a row is
 * inserted with the copy in hand, under the CID's content lock, and a copy is marked for deletion only under that lock,
 * when no Blob row names its CID.
 */
export class SqlBlobStore implements BlobStore {
  constructor(
    private readonly db: Database,
    private readonly limits: BlobLimits,
  ) {}

  async beginWrite(now: number) {
    // 128 random bits in hex: a file name on every file system, never guessed, never reused.
    const key = randomBytes(16).toString("hex");
    const abandonAt = now + WRITE_ABANDONED_AFTER_MS;
    await this.db.execute(function* (): Program<void> {
      yield* run(sql`INSERT INTO "BlobContent" ("key", "cid", "state", "dueAt") VALUES (${key}, NULL, 'writing', ${at(abandonAt)})`);
    });
    return key;
  }

  async putBlob(did: string, blob: NewBlob, now: number) {
    const { quotaBytes, unreferencedGraceMs } = this.limits;
    return this.db.transaction(function* (): Program<PutBlobOutcome> {
      yield* lockAccountData(did);
      // The account's own expired blobs go first, so that they never count against its quota.
      const own = yield* all(tables.Blob.pick("cid"), deleteExpiredOfAccount(did, at(now - unreferencedGraceMs)));
      yield* release(own.map(({ cid }) => ({ did, cid })), now);
      yield* removeExpiredBlobs(now, unreferencedGraceMs);
      const existing = yield* get(tables.Blob.pick("cid", "mimeType", "size", "unreferencedSince"), sql`SELECT "cid", "mimeType", "size", "unreferencedSince" FROM "Blob"
        WHERE "did" = ${did} AND "cid" = ${blob.cid}`);
      if (existing) {
        // Same bytes, same CID: nothing new to store or count. A referenced blob is kept (only this account's record
        // writes, under its lock, can change that); an unreferenced one starts its grace period again, since uploading
        // it again means it is about to be used. Other accounts' cleanups delete expired blobs without this account's
        // lock: on PostgreSQL one that deleted it after the read above (its clock past the grace period) makes this
        // UPDATE wait and then find no row, and the blob is stored anew below rather than reported stored while gone.
        const { unreferencedSince, ...stored } = existing;
        if (unreferencedSince === null) return { kind: "stored", blob: stored, copy: "spare" };
        const refreshed = yield* run(sql`UPDATE "Blob" SET "unreferencedSince" = ${at(now)} WHERE "did" = ${did} AND "cid" = ${blob.cid} AND "unreferencedSince" IS NOT NULL`);
        if (refreshed === 1) return { kind: "stored", blob: stored, copy: "spare" };
      }
      const used = yield* get(BYTES_OF_ACCOUNT_ROW, bytesOfAccount(did));
      const usedBytes = used?.bytes ?? 0;
      if (usedBytes + blob.size > quotaBytes) return { kind: "over-quota", size: blob.size, usedBytes, quotaBytes };
      yield* lockBlobContent(blob.cid);
      const copy = yield* claimCopy(blob.cid, blob.contentKey);
      if (copy === "abandoned") return { kind: "abandoned" };
      // A record may name the blob before it is uploaded: then it is referenced from the start.
      const referenced = yield* get(ONE, sql`SELECT 1 AS "one" FROM "RecordBlob" WHERE "did" = ${did} AND "blobCid" = ${blob.cid} LIMIT 1`);
      yield* run(sql`INSERT INTO "Blob" ("did", "cid", "declaredType", "detectedType", "mimeType", "size", "bytes", "createdAt", "unreferencedSince")
        VALUES (${did}, ${blob.cid}, ${blob.declaredType}, ${blob.detectedType ?? null}, ${blob.mimeType}, ${blob.size}, ${NO_BYTES}, ${at(now)},
          ${referenced ? null : at(now)})`);
      return { kind: "stored", blob: { cid: blob.cid, mimeType: blob.mimeType, size: blob.size }, copy };
    });
  }

  async endWrite(contentKey: string) {
    await this.db.execute(function* (): Program<void> {
      yield* run(sql`DELETE FROM "BlobContent" WHERE "key" = ${contentKey} AND "state" = 'writing'`);
    });
  }

  async servable(did: string, cid: string) {
    return this.db.execute(function* (): Program<ServableBlob | undefined> {
      // The reference PDS serves only blobs a record references (the others stay in its temporary storage).
      return yield* get(SERVABLE_ROW, sql`SELECT b."mimeType" AS "mimeType", b."size" AS "size", c."key" AS "contentKey"
        FROM "Blob" b JOIN "BlobContent" c ON c."cid" = b."cid"
        WHERE b."did" = ${did} AND b."cid" = ${cid} AND EXISTS (SELECT 1 FROM "RecordBlob" r WHERE r."did" = b."did" AND r."blobCid" = b."cid")`);
    });
  }

  async sweep(now: number, batch: number) {
    return this.db.transaction(function* (): Program<SweepBatch> {
      const released = yield* all(RELEASE_ROW, releases(batch));
      // In CID order, so that two sweeps never wait for each other's locks in a cycle (an upload takes one).
      for (const cid of [...new Set(released.map((row) => row.cid))].sort()) {
        yield* lockBlobContent(cid);
        yield* run(doomUnused(at(now), cid, cid));
      }
      for (const row of released) {
        yield* send(sql`DELETE FROM "BlobRelease" WHERE "releasedAt" = ${at(row.releasedAt)} AND "did" = ${row.did} AND "cid" = ${row.cid}`);
      }
      const doomed: string[] = [];
      const dueRows = yield* all(tables.BlobContent.pick("key", "state"), due(at(now), batch));
      for (const { key, state } of dueRows) {
        // An abandoned write is taken only if it is still being written: its upload's claim (claimCopy) and this
        // UPDATE change the same row, and whichever comes second finds it changed.
        const taken = state === "deleting" || (yield* run(sql`UPDATE "BlobContent" SET "state" = 'deleting', "dueAt" = ${at(now)}
          WHERE "key" = ${key} AND "state" = 'writing' AND "dueAt" <= ${at(now)}`)) === 1;
        if (taken) doomed.push(key);
      }
      return { doomed, more: released.length === batch || dueRows.length === batch };
    });
  }

  async forget(contentKeys: readonly string[]) {
    await this.db.execute(function* (): Program<void> {
      for (const key of contentKeys) yield* run(sql`DELETE FROM "BlobContent" WHERE "key" = ${key} AND "state" = 'deleting'`);
    });
  }

  async legacyBlobs(after: LegacyBlob | undefined, limit: number) {
    const [did, cid] = after ? [after.did, after.cid] : ["", ""];
    return this.db.execute(function* (): Program<LegacyBlob[]> {
      return yield* all(DID_CID, sql`SELECT "did", "cid" FROM "Blob" WHERE ("did", "cid") > (${did}, ${cid}) AND length("bytes") > 0
        ORDER BY "did", "cid" LIMIT ${limit}`);
    });
  }

  async legacyBytes(blob: LegacyBlob) {
    const row = await this.db.execute(function* (): Program<{ bytes: Uint8Array } | undefined> {
      return yield* get(tables.Blob.pick("bytes"), sql`SELECT "bytes" FROM "Blob" WHERE "did" = ${blob.did} AND "cid" = ${blob.cid} AND length("bytes") > 0`);
    });
    return row?.bytes;
  }

  async adoptLegacy(blob: LegacyBlob, contentKey: string) {
    return this.db.transaction(function* (): Program<"kept" | "spare" | "gone" | "abandoned"> {
      yield* lockBlobContent(blob.cid);
      // First, so that a deletion of the row either came before (nothing to adopt: a copy adopted for a row that is
      // gone would have no release to delete it) or waits for this transaction and then releases the CID.
      const moved = yield* run(sql`UPDATE "Blob" SET "bytes" = ${NO_BYTES} WHERE "did" = ${blob.did} AND "cid" = ${blob.cid} AND length("bytes") > 0`);
      if (moved === 0) return "gone";
      return yield* claimCopy(blob.cid, contentKey);
    });
  }
}

/**
 * Under the CID's content lock: the CID's stored copy if there is one ("spare": the caller's copy is not needed), or
 * the caller's copy becomes it ("kept"), unless a sweep took it for abandoned meanwhile.
 */
function* claimCopy(cid: string, contentKey: string): Program<"kept" | "spare" | "abandoned"> {
  const stored = yield* get(tables.BlobContent.pick("key"), sql`SELECT "key" FROM "BlobContent" WHERE "cid" = ${cid}`);
  if (stored) return "spare";
  const claimed = yield* run(sql`UPDATE "BlobContent" SET "cid" = ${cid}, "state" = 'stored', "dueAt" = NULL WHERE "key" = ${contentKey} AND "state" = 'writing'`);
  return claimed === 1 ? "kept" : "abandoned";
}
