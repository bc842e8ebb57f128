export type StoredRecord = { collection: string; rkey: string; cid: string; value: unknown; createdAt: number; updatedAt: number };

/**
 * One validated write. `create` needs the key free and `update` needs a record
 * there (applyWrites distinguishes them, and a token may hold one action but
 * not the other); `put` (putRecord) is either, and needs both permissions.
 */
export type RecordWrite =
  | { action: "create"; collection: string; rkey: string; value: unknown; cid: string }
  | { action: "update" | "put"; collection: string; rkey: string; value: unknown; cid: string; swapCid?: string | null }
  | { action: "delete"; collection: string; rkey: string; swapCid?: string | null };

/** Why a write could not be applied; the whole batch is then left unapplied. */
export type WriteConflict = { kind: "exists" | "missing" | "swap-mismatch"; collection: string; rkey: string };

export interface RepoStore {
  getRecord(did: string, collection: string, rkey: string): Promise<StoredRecord | undefined>;
  listRecords(did: string, collection: string, options: { limit: number; cursor?: string; reverse: boolean }): Promise<StoredRecord[]>;
  /** Applies every write or none (one transaction); returns the first conflict instead of applying. */
  applyWrites(did: string, writes: RecordWrite[], now: number): Promise<WriteConflict | undefined>;
  getPreferences(did: string): Promise<unknown[]>;
  putPreferences(did: string, preferences: unknown[], now: number): Promise<void>;
}
