import type Database from "better-sqlite3";
import type { BlobStore, NewBlob, PutBlobOutcome, StoredBlob } from "../repo/blob-store.ts";
import { deleteExpiredSql } from "./expired-rows.ts";

export type BlobLimits = {
  /** Most bytes of blobs one account may store, unreferenced ones in their grace period included. */
  quotaBytes: number;
  /** How long a blob may stay unreferenced before it is deleted. */
  unreferencedGraceMs: number;
};

/**
 * Expired unreferenced blobs removed per upload or record write, across all accounts. Each may be
 * ATRIUM_BLOB_MAX_BYTES, so the batch stays small; more than one, so removal outpaces the one blob an upload adds
 * (the lazy-expiry convention of expired-rows.ts).
 */
export const BLOB_CLEANUP_BATCH = 5;

/** The SQL of the cleanup steps, exported for the index tests (expired-rows.test.ts). */
export const BLOB_SQL = {
  deleteExpired: deleteExpiredSql("Blob", "rowid", "unreferencedSince", BLOB_CLEANUP_BATCH),
  deleteExpiredOfAccount: `DELETE FROM "Blob" WHERE did = ? AND unreferencedSince <= ?`,
  bytesOfAccount: `SELECT COALESCE(SUM(size), 0) FROM "Blob" WHERE did = ?`,
};

/**
 * Blobs and the record→blob references on the synchronous connection (docs/decisions/0002, 0008).
 *
 * Invariant: a blob's `unreferencedSince` is null exactly when some RecordBlob row of its account names its CID.
 * Uploads set it from that table; `recordWritten` keeps it as records gain and lose references. Both run inside
 * BEGIN IMMEDIATE transactions, so the quota sum and the insert it allows cannot interleave with another upload of
 * this process or of another process on the same file.
 */
export class SqliteBlobStore implements BlobStore {
  private readonly s;
  private readonly putTx;

  constructor(
    db: Database.Database,
    private readonly limits: BlobLimits,
  ) {
    this.s = {
      deleteExpired: db.prepare(BLOB_SQL.deleteExpired),
      deleteExpiredOfAccount: db.prepare(BLOB_SQL.deleteExpiredOfAccount),
      bytesOfAccount: db.prepare(BLOB_SQL.bytesOfAccount).pluck(),
      find: db.prepare(`SELECT cid, mimeType, size FROM "Blob" WHERE did = ? AND cid = ?`),
      restartGrace: db.prepare(`UPDATE "Blob" SET unreferencedSince = ? WHERE did = ? AND cid = ? AND unreferencedSince IS NOT NULL`),
      insert: db.prepare(
        `INSERT INTO "Blob" (did, cid, declaredType, detectedType, mimeType, size, bytes, createdAt, unreferencedSince)
         VALUES (@did, @cid, @declaredType, @detectedType, @mimeType, @size, @bytes, @now,
                 CASE WHEN EXISTS (SELECT 1 FROM "RecordBlob" WHERE did = @did AND blobCid = @cid) THEN NULL ELSE @now END)`,
      ),
      referencesOf: db.prepare(`SELECT blobCid FROM "RecordBlob" WHERE did = ? AND collection = ? AND rkey = ?`).pluck(),
      dropReferences: db.prepare(`DELETE FROM "RecordBlob" WHERE did = ? AND collection = ? AND rkey = ?`),
      addReference: db.prepare(`INSERT OR IGNORE INTO "RecordBlob" (did, collection, rkey, blobCid) VALUES (?, ?, ?, ?)`),
      markReferenced: db.prepare(`UPDATE "Blob" SET unreferencedSince = NULL WHERE did = ? AND cid = ? AND unreferencedSince IS NOT NULL`),
      markUnreferencedIfOrphaned: db.prepare(
        `UPDATE "Blob" SET unreferencedSince = @now
         WHERE did = @did AND cid = @cid AND unreferencedSince IS NULL
           AND NOT EXISTS (SELECT 1 FROM "RecordBlob" WHERE did = @did AND blobCid = @cid)`,
      ),
    };
    this.putTx = db.transaction((did: string, blob: NewBlob, now: number) => this.putInTransaction(did, blob, now));
  }

  putBlob(did: string, blob: NewBlob, now: number): PutBlobOutcome {
    return this.putTx.immediate(did, blob, now);
  }

  private putInTransaction(did: string, blob: NewBlob, now: number): PutBlobOutcome {
    // The account's own expired blobs go first, so that they never count against its quota.
    this.s.deleteExpiredOfAccount.run(did, this.expiryCutoff(now));
    this.removeExpired(now);
    const existing = this.s.find.get(did, blob.cid) as StoredBlob | undefined;
    if (existing) {
      // Same bytes, same CID: nothing new to store or count. Uploading it again means it is about to be used.
      this.s.restartGrace.run(now, did, blob.cid);
      return { kind: "stored", blob: existing };
    }
    const usedBytes = this.s.bytesOfAccount.get(did) as number;
    const size = blob.bytes.byteLength;
    if (usedBytes + size > this.limits.quotaBytes) return { kind: "over-quota", usedBytes, quotaBytes: this.limits.quotaBytes };
    this.s.insert.run({
      did,
      cid: blob.cid,
      declaredType: blob.declaredType,
      detectedType: blob.detectedType ?? null,
      mimeType: blob.mimeType,
      size,
      bytes: Buffer.from(blob.bytes),
      now,
    });
    return { kind: "stored", blob: { cid: blob.cid, mimeType: blob.mimeType, size } };
  }

  /** The blob CIDs one record references now: read before writing it (deleting a record cascades to its rows). */
  referencesOf(did: string, collection: string, rkey: string): string[] {
    return this.s.referencesOf.all(did, collection, rkey) as string[];
  }

  /**
   * After a record write: its references were `previous` and are now `cids` (none after a delete). Blobs it now
   * references stop being unreferenced; blobs it no longer references, and no other record of the account does,
   * start their grace period. Must run inside the transaction of the record write (SqliteRepoStore.applyWrites).
   */
  recordWritten(did: string, collection: string, rkey: string, previous: readonly string[], cids: readonly string[], now: number): void {
    if (previous.length === 0 && cids.length === 0) return;
    if (previous.length > 0) this.s.dropReferences.run(did, collection, rkey);
    for (const cid of cids) {
      this.s.addReference.run(did, collection, rkey, cid);
      this.s.markReferenced.run(did, cid);
    }
    const kept = new Set(cids);
    for (const cid of previous) {
      if (!kept.has(cid)) this.s.markUnreferencedIfOrphaned.run({ now, did, cid });
    }
  }

  /** Deletes a small batch of blobs, of any account, unreferenced for longer than the grace period. */
  removeExpired(now: number): void {
    this.s.deleteExpired.run(this.expiryCutoff(now));
  }

  private expiryCutoff(now: number): number {
    return now - this.limits.unreferencedGraceMs;
  }
}
