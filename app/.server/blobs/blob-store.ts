export type StoredBlob = { cid: string; mimeType: string; size: number };

/** An upload whose bytes were written, durably, as the copy `contentKey` (BlobStore.beginWrite). */
export type NewBlob = { cid: string; declaredType: string; detectedType?: string; mimeType: string; size: number; contentKey: string };

/**
 * What an upload came to: stored (or already there), refused because the account's quota would be exceeded, or lost
 * because its copy was taken for abandoned meanwhile (only past WRITE_ABANDONED_AFTER_MS, far beyond any request).
 * `copy`: whether the upload's own copy now holds the CID's bytes ("kept"), or is not needed because a copy of the
 * same bytes was already stored ("spare"); every copy but a kept one is the caller's to discard.
 */
export type PutBlobOutcome =
  | { kind: "stored"; blob: StoredBlob; copy: "kept" | "spare" }
  | { kind: "over-quota"; size: number; usedBytes: number; quotaBytes: number }
  | { kind: "abandoned" };

/** A blob that may be served (getBlob): a record of its account references it, and its bytes are stored as `contentKey`. */
export type ServableBlob = { mimeType: string; size: number; contentKey: string };

/** What one sweep did: the copies it marked for deletion, and whether more work was waiting than it took. */
export type SweepBatch = { doomed: string[]; more: boolean };

/** A blob still kept the way it was before the content store (docs/decisions/0043): its bytes in its row. */
export type LegacyBlob = { did: string; cid: string };

/**
 * Blobs per account, with a quota and lazy removal of blobs no record references (docs/decisions/0008), and the
 * register of the stored copies of their bytes (docs/decisions/0043). The bytes themselves are in a BlobContentStore;
 * this store knows which copies exist, which CID each holds, and when one may be deleted. Record writes keep the
 * references up to date through the record store, in the same transaction.
 */
export interface BlobStore {
  /**
   * Registers a new copy as being written, before its first byte, and answers its key: a copy left by a crash or a
   * failed upload is then known, and a later sweep deletes it once it is older than WRITE_ABANDONED_AFTER_MS.
   */
  beginWrite(now: number): Promise<string>;
  /**
   * One atomic step: removes the account's expired unreferenced blobs, then stores the blob if the account's stored
   * bytes plus this blob stay within the quota, its copy becoming the CID's copy unless one is stored already. A blob
   * the account already has is not counted again.
   */
  putBlob(did: string, blob: NewBlob, now: number): Promise<PutBlobOutcome>;
  /** Forgets a copy that was being written and is not kept, once its bytes were removed. */
  endWrite(contentKey: string): Promise<void>;
  /** The blob if a record of the account references it and its bytes are stored; undefined otherwise. */
  servable(did: string, cid: string): Promise<ServableBlob | undefined>;
  /**
   * One atomic step of the lazy sweep: marks for deletion the copies of CIDs that no account has any more (since the
   * Blob rows were deleted) and those of abandoned writes, at most `batch` of each, and answers every copy marked
   * (by this sweep or an earlier one that did not finish) whose bytes are to be removed now.
   */
  sweep(now: number, batch: number): Promise<SweepBatch>;
  /** Forgets copies marked for deletion, once their bytes were removed. */
  forget(contentKeys: readonly string[]): Promise<void>;
  /** Blobs whose bytes are still in their row, in key order after `after`. */
  legacyBlobs(after: LegacyBlob | undefined, limit: number): Promise<LegacyBlob[]>;
  /** The bytes of a legacy blob, unless they were moved meanwhile. */
  legacyBytes(blob: LegacyBlob): Promise<Uint8Array | undefined>;
  /**
   * One atomic step: the legacy blob's bytes, written as the copy `contentKey`, become its CID's copy (unless one is
   * stored already: "spare"), and its row forgets them. "gone": its row was deleted or already moved meanwhile.
   */
  adoptLegacy(blob: LegacyBlob, contentKey: string): Promise<"kept" | "spare" | "gone" | "abandoned">;
}
