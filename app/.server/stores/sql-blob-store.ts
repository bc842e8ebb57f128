import { shape } from "../db/row-shape.ts";
import { tables } from "../db/rows.generated.ts";
import { all, at, get, lock, run, send, sql, statementOf, type Database, type Program } from "../db/sql.ts";
import type { BlobStore, NewBlob, PutBlobOutcome } from "../repo/blob-store.ts";
import { deleteExpiredSql, expiredRowsCleanup } from "./expired-rows.ts";

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
 * The SQL of the steps whose plans are tested (expired-rows.test.ts, sql-blob-store.test.ts): the cleanups must
 * search an index, and the quota's sum must read an index alone, never the blobs' bytes. putBlob runs these texts.
 */
export const BLOB_SQL = {
  deleteExpired: deleteExpiredSql("Blob", ["did", "cid"], "unreferencedSince", BLOB_CLEANUP_BATCH),
  deleteExpiredOfAccount: `DELETE FROM "Blob" WHERE "did" = ? AND "unreferencedSince" <= ?`,
  bytesOfAccount: `SELECT COALESCE(SUM("size"), 0) AS "bytes" FROM "Blob" WHERE "did" = ?`,
};

const cleanupBlobs = expiredRowsCleanup("Blob", ["did", "cid"], "unreferencedSince", BLOB_CLEANUP_BATCH);
const deleteExpiredOfAccount = statementOf(BLOB_SQL.deleteExpiredOfAccount);
const bytesOfAccount = statementOf(BLOB_SQL.bytesOfAccount);
const BYTES_OF_ACCOUNT_ROW = shape({ bytes: "integer" });
/** The row of an existence check. */
const ONE = shape({ one: "integer" });

/**
 * The lock a transaction takes before it changes an account's records or blobs: an upload's quota sum and the
 * references a record write adds or removes then never interleave (on SQLite, BEGIN IMMEDIATE did so already).
 */
export function* lockAccountData(did: string): Program<void> {
  yield* lock(`account-data:${did}`);
}

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

/** Deletes a small batch of blobs, of any account, unreferenced for longer than the grace period. */
export function* removeExpiredBlobs(now: number, graceMs: number): Program<void> {
  yield* send(cleanupBlobs(now - graceMs));
}

/**
 * Blobs and the record→blob references (docs/decisions/0008).
 *
 * Invariant: a blob's `unreferencedSince` is null exactly when some RecordBlob row of its account names its CID.
 * Uploads set it from that table; record writes keep it as records gain and lose references. Both are transactions
 * that take the account's data lock first, so the quota sum and the insert it allows cannot interleave with another
 * upload or record write of the account, in this process or another.
 */
export class SqlBlobStore implements BlobStore {
  constructor(
    private readonly db: Database,
    private readonly limits: BlobLimits,
  ) {}

  async putBlob(did: string, blob: NewBlob, now: number) {
    const { quotaBytes, unreferencedGraceMs } = this.limits;
    const size = blob.bytes.byteLength;
    return this.db.transaction(function* (): Program<PutBlobOutcome> {
      yield* lockAccountData(did);
      // The account's own expired blobs go first, so that they never count against its quota.
      yield* run(deleteExpiredOfAccount(did, at(now - unreferencedGraceMs)));
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
        if (unreferencedSince === null) return { kind: "stored", blob: stored };
        const refreshed = yield* run(sql`UPDATE "Blob" SET "unreferencedSince" = ${at(now)} WHERE "did" = ${did} AND "cid" = ${blob.cid} AND "unreferencedSince" IS NOT NULL`);
        if (refreshed === 1) return { kind: "stored", blob: stored };
      }
      const used = yield* get(BYTES_OF_ACCOUNT_ROW, bytesOfAccount(did));
      const usedBytes = used?.bytes ?? 0;
      if (usedBytes + size > quotaBytes) return { kind: "over-quota", usedBytes, quotaBytes };
      // A record may name the blob before it is uploaded: then it is referenced from the start.
      const referenced = yield* get(ONE, sql`SELECT 1 AS "one" FROM "RecordBlob" WHERE "did" = ${did} AND "blobCid" = ${blob.cid} LIMIT 1`);
      yield* run(sql`INSERT INTO "Blob" ("did", "cid", "declaredType", "detectedType", "mimeType", "size", "bytes", "createdAt", "unreferencedSince")
        VALUES (${did}, ${blob.cid}, ${blob.declaredType}, ${blob.detectedType ?? null}, ${blob.mimeType}, ${size}, ${blob.bytes}, ${at(now)},
          ${referenced ? null : at(now)})`);
      return { kind: "stored", blob: { cid: blob.cid, mimeType: blob.mimeType, size } };
    });
  }
}
