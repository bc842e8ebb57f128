/** A browser signed in to the operator page (docs/decisions/0051). Times are epoch milliseconds. */
export type StoredAdminSession = { idHash: string; passwordTag: string; createdAt: number; expiresAt: number };

export interface AdminSessionStore {
  /** Stores a new session (and drops a few expired ones). */
  create(session: StoredAdminSession): Promise<void>;
  /** The live session of this id hash; an expired one is deleted and absent (lazy expiry). */
  find(idHash: string, now: number): Promise<StoredAdminSession | undefined>;
  delete(idHash: string): Promise<void>;
}
