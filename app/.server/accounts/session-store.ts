import type { AccountProfile } from "./account-store.ts";

/** A signed-in browser: the cookie holds a random id, the store only its hash. Times are epoch milliseconds. */
export type StoredSession = {
  idHash: string;
  accountDid: string;
  userAgent: string | null;
  ipAddress: string | null;
  createdAt: number;
  lastSeenAt: number;
  expiresAt: number;
  /** When this browser last proved the password or a passkey (null: not since that was recorded). */
  authenticatedAt: number | null;
  /** "Stay signed in on this device" was ticked (docs/decisions/0020). */
  staySignedIn: boolean;
  /** The SHA-256 of the browser's device id for the account (docs/decisions/0009, 0056); null or absent: not recorded. */
  deviceHash: string | null;
};

/**
 * What a sign-in proved, checked again where its session is stored: the password hash the password matched, or the
 * passkey that signed. A reset, a password change or a lockdown that lands while the sign-in is still checking
 * (a password check takes a noticeable time) then leaves it without a session (docs/decisions/0020).
 */
export type CredentialProof = { passwordHash: string } | { passkey: string };

export interface SessionStore {
  /**
   * Stores a new session (and drops a few expired ones), in the same step that checks `proof` still holds: the
   * account's password hash unchanged, or the passkey still registered to it. False, and no session, otherwise.
   */
  create(session: StoredSession, proof: CredentialProof): Promise<boolean>;
  /** The session and who it signed in (no password hash, no signing key); an expired session is deleted and absent (lazy expiry). */
  find(idHash: string, now: number): Promise<{ session: StoredSession; account: AccountProfile } | undefined>;
  touch(idHash: string, now: number): Promise<void>;
  markAuthenticated(idHash: string, now: number): Promise<void>;
  /** The account's live sessions, most recently seen first. */
  listLive(accountDid: string, now: number): Promise<StoredSession[]>;
  /** Ends one session; `accountDid`, when given, must own it. */
  delete(idHash: string, accountDid?: string): Promise<void>;
  /** Ends every session of the account but one; how many ended. */
  deleteOthers(accountDid: string, keepIdHash: string): Promise<number>;
  /** Deletes every session of the account in the browser whose device id hashes to `deviceHash`; how many. */
  deleteBrowser(accountDid: string, deviceHash: string): Promise<number>;
}
