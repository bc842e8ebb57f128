export type StoredRecord = { collection: string; rkey: string; cid: string; value: unknown; createdAt: number; updatedAt: number };

/** One write of an applyWrites batch, already validated. */
export type RecordWrite =
  | { action: "create"; collection: string; rkey: string; value: unknown; cid: string }
  | { action: "update"; collection: string; rkey: string; value: unknown; cid: string; swapCid?: string | null }
  | { action: "delete"; collection: string; rkey: string; swapCid?: string | null };

/** Why a write could not be applied; the whole batch is then left unapplied. */
export type WriteConflict = { kind: "exists" | "swap-mismatch"; collection: string; rkey: string };

export interface RepoStore {
  getRecord(did: string, collection: string, rkey: string): StoredRecord | undefined;
  listRecords(did: string, collection: string, options: { limit: number; cursor?: string; reverse: boolean }): StoredRecord[];
  /** Applies every write or none (one transaction); returns the first conflict instead of applying. */
  applyWrites(did: string, writes: RecordWrite[], now: number): WriteConflict | undefined;
  getPreferences(did: string): unknown[];
  putPreferences(did: string, preferences: unknown[], now: number): void;
}
