/** An account as stored. Times are epoch milliseconds. */
export type StoredAccount = {
  did: string;
  handle: string;
  email: string;
  /** scrypt$N$r$p$salt$hash (never the password itself). */
  passwordHash: string;
  emailConfirmedAt: number | null;
  /**
   * The account's own ES256 signing key: its private JWK sealed for its DID (SigningKeys, docs/decisions/0050), which
   * the store files under the id of the key that sealed it.
   */
  signingKey: string;
  createdAt: number;
};

/**
 * An account as a signed-in browser needs it on every request: who it is, without the password hash and the private
 * signing key, which only the steps that check a password or sign something read (AccountStore).
 */
export type AccountProfile = Omit<StoredAccount, "passwordHash" | "signingKey">;

/** What getSession tells an app allowed to read the email: the address, whether confirmed, the emailed sign-in code. */
export type EmailSettings = { email: string; emailConfirmedAt: number | null; emailAuthFactor: boolean };

/** Which unique field a new account or handle collided with. */
export type AccountClash = "did" | "handle" | "email";

/** What "Secure your account" removed (docs/decisions/0007). */
export type LockdownResult = { passkeys: number; otherSessions: number; apps: number };

/** Accounts, and the steps that span an account's rows. */
export interface AccountStore {
  /** Creates the account unless its DID, handle or email is taken; then says which (checked and written atomically). */
  insert(account: StoredAccount): Promise<AccountClash | undefined>;
  /** The whole row, password hash and private signing key included: only for the steps that check or sign. */
  find(by: "did" | "handle" | "email", value: string): Promise<StoredAccount | undefined>;
  /** Who the account is, reading neither the password hash nor the signing key (every lookup that needs no secret). */
  profile(by: "did" | "handle" | "email", value: string): Promise<AccountProfile | undefined>;
  /** The account's email settings (getSession, the emailed sign-in code: docs/decisions/0047). */
  emailSettings(did: string): Promise<EmailSettings | undefined>;
  /** Turns the emailed sign-in code of password sessions on or off (docs/decisions/0047). */
  setEmailAuthFactor(did: string, on: boolean, now: number): Promise<void>;
  /** Every account, oldest first. */
  list(): Promise<StoredAccount[]>;
  /** Changes the handle unless another account holds it (checked and written atomically). False: taken. */
  updateHandle(did: string, handle: string, now: number): Promise<boolean>;
  /**
   * Sets the password hash; with `signOut`, also ends every other session of the account in the same step, so that
   * no session made with the old password outlives the change (docs/decisions/0007).
   */
  setPasswordHash(did: string, passwordHash: string, now: number, signOut?: { keepSessionIdHash: string }): Promise<void>;
  /**
   * In one step, deletes the account under `previousDid` (with everything it owns, by cascade) and stores `account`
   * (a re-creation under a newly registered DID: AccountManager.register).
   */
  replace(previousDid: string, account: StoredAccount): Promise<void>;
  /**
   * All or nothing: removes every passkey, signs out every browser but
   * `keepSessionIdHash` and, when asked, disconnects every app (grants, their
   * tokens and unredeemed codes, remembered consent). A failure half-way never
   * leaves, say, the passkeys gone but a planted session alive.
   */
  secure(did: string, keepSessionIdHash: string, disconnectApps: boolean): Promise<LockdownResult>;
}
