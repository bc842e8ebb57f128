export type StoredBlob = { cid: string; mimeType: string; size: number };

export type NewBlob = { cid: string; declaredType: string; detectedType?: string; mimeType: string; bytes: Uint8Array };

/** What an upload came to: stored (or already there), or refused because the account's quota would be exceeded. */
export type PutBlobOutcome =
  | { kind: "stored"; blob: StoredBlob }
  | { kind: "over-quota"; usedBytes: number; quotaBytes: number };

/**
 * Blobs per account, with a quota and lazy removal of blobs no record references (docs/decisions/0008). Record
 * writes keep the references up to date through the record store, in the same transaction.
 */
export interface BlobStore {
  /**
   * One atomic step: removes the account's expired unreferenced blobs, then stores the blob if the account's stored
   * bytes plus this blob stay within the quota. A blob the account already has is not counted again.
   */
  putBlob(did: string, blob: NewBlob, now: number): Promise<PutBlobOutcome>;
}
