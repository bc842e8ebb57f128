import type { AccountState } from "./account-status.ts";
import type { AccessScope } from "./session-jwt.ts";

/** A password session as stored (docs/decisions/0047). Times are epoch milliseconds. */
export type StoredPasswordSession = {
  id: string;
  accountDid: string;
  /** The app password it signed in with; null: the account's own password. */
  appPasswordId: string | null;
  scope: AccessScope;
  userAgent: string | null;
  createdAt: number;
  lastUsedAt: number;
  /** Its newest refresh token's expiry. */
  expiresAt: number;
};

/**
 * What createSession's and refreshSession's answers say of the account (their lexicons), read in the step that stores
 * the session or spends the token, so that the answer costs no other read.
 */
export type SessionAccount = { handle: string; email: string; emailConfirmedAt: number | null; emailAuthFactor: boolean; deactivatedAt: number | null; takendownAt: number | null };

/**
 * What a sign-in proved: the account's password hash it matched, or the app password it was, with the privilege it
 * had then. Checked again where the session is stored: a privilege taken back meanwhile (docs/decisions/0053) fails it
 * as a revocation does.
 */
export type SessionProof = { passwordHash: string } | { appPasswordId: string; privileged: boolean };

/** The SHA-256 of a new access token's and refresh token's jti, with their expiries. */
export type IssuedTokenHashes = { accessHash: string; accessExpiresAt: number; refreshHash: string; refreshExpiresAt: number };

/** A refresh: the presented token's hash, its successor's (derived from it), and the new access token's. */
export type RefreshStep = {
  accountDid: string;
  refreshHash: string;
  successorHash: string;
  accessHash: string;
  accessExpiresAt: number;
  refreshExpiresAt: number;
  /** A spent token works again for this long (a retry whose answer was lost), handing out the same successor. */
  graceMs: number;
  now: number;
};

/**
 * `rotated`: the token was live and is spent now; `retried`: it was spent before, within its grace, and its successor
 * is handed out again. Either way with the successor's expiry. `revoked`: no such live token (never, ended, or past its
 * grace): the session, if any, is untouched.
 */
export type RefreshOutcome =
  | { kind: "rotated" | "retried"; session: StoredPasswordSession; account: SessionAccount; successorExpiresAt: number }
  | { kind: "revoked" };

/** What a call made with an access token needs: its session, the account's handle, the account's state. */
export type AccessOwner = { session: StoredPasswordSession; handle: string; accountState: AccountState };

/** A session as the account pages list it. */
export type ListedPasswordSession = StoredPasswordSession & { appPasswordName: string | null };

export interface PasswordSessionStore {
  /**
   * Stores a new session and its first tokens (and drops a few expired rows), in the step that checks `proof` still
   * holds under the account's credentials lock: its password hash unchanged, or the app password not revoked; the
   * account as the answer tells it. Undefined, and nothing stored, otherwise (a password change or a revocation landed
   * while the sign-in was being checked). AccountTakedown, and nothing stored, when the account is taken down and the
   * session is not a takedown-only one (TAKENDOWN_ACCESS): a takedown that commits first leaves no other session.
   */
  create(session: StoredPasswordSession, proof: SessionProof, tokens: IssuedTokenHashes): Promise<SessionAccount | undefined>;
  /** Spends a refresh token and issues the next pair, atomically (see RefreshOutcome). */
  refresh(step: RefreshStep): Promise<RefreshOutcome>;
  /** The live access token's session, or undefined (unknown, expired, or its session ended). */
  findAccess(accessHash: string, now: number): Promise<AccessOwner | undefined>;
  /** Records use of a session, and of its app password (callers keep it to once a minute). */
  touch(sessionId: string, now: number): Promise<void>;
  /** Ends the session a refresh token (live, spent or expired) belongs to; whether one ended. */
  endByRefreshToken(accountDid: string, refreshHash: string): Promise<boolean>;
  /** The account's live sessions, most recently used first. */
  list(accountDid: string, now: number): Promise<ListedPasswordSession[]>;
  /** Ends one of the account's sessions; whether it was there. */
  end(accountDid: string, sessionId: string): Promise<boolean>;
}
