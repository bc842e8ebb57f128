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
  /** Set when the account is created deactivated: one moving here from another PDS (docs/decisions/0055). */
  deactivatedAt?: number | null;
};

/**
 * An account as a signed-in browser needs it on every request: who it is, without the password hash and the private
 * signing key, which only the steps that check a password or sign something read (AccountStore).
 */
export type AccountProfile = Omit<StoredAccount, "passwordHash" | "signingKey">;

/** What getSession tells an app allowed to read the email: the address, whether confirmed, the emailed sign-in code. */
export type EmailSettings = { email: string; emailConfirmedAt: number | null; emailAuthFactor: boolean };

/** Which unique field a new account or handle collided with; `invite`: its invite code could admit no more accounts. */
export type AccountClash = "did" | "handle" | "email" | "invite";

/** The invite code a new account spends one use of, in the step that stores it (docs/decisions/0052). */
export type SpentInvite = { code: string };

/** What "Secure your account" removed (docs/decisions/0007). */
export type LockdownResult = { passkeys: number; otherSessions: number; apps: number };

/** An account as the operator sees it (docs/decisions/0051): no password hash, no signing key. */
export type OperatorAccountRow = AccountProfile & {
  lastSignInAt: number | null;
  deactivatedAt: number | null;
  takendownAt: number | null;
  takedownRef: string | null;
};

/**
 * A page of the accounts in handle order: those whose handle sorts after `afterHandle`, and, with `prefix`, only
 * those whose handle, email or DID starts with it.
 */
export type AccountPageQuery = { prefix?: string; afterHandle?: string; limit: number };

/** Accounts, and the steps that span an account's rows. */
export interface AccountStore {
  /**
   * Creates the account unless its DID, handle or email is taken, or `invite` can admit no more accounts; then says
   * which (checked and written atomically: the invite's use is spent in the same step, docs/decisions/0052).
   */
  insert(account: StoredAccount, invite?: SpentInvite): Promise<AccountClash | undefined>;
  /** The whole row, password hash and private signing key included: only for the steps that check or sign. */
  find(by: "did" | "handle" | "email", value: string): Promise<StoredAccount | undefined>;
  /** Who the account is, reading neither the password hash nor the signing key (every lookup that needs no secret). */
  profile(by: "did" | "handle" | "email", value: string): Promise<AccountProfile | undefined>;
  /** One page of the accounts, read as one bounded statement (the operator page and the account command list them). */
  page(query: AccountPageQuery): Promise<OperatorAccountRow[]>;
  /** The accounts of these DIDs that exist, as the operator sees them. */
  operatorView(dids: readonly string[]): Promise<OperatorAccountRow[]>;
  /**
   * The operator's change of the account's email (com.atproto.admin.updateAccountEmail): unconfirmed, as the
   * reference sets it; what was mailed to the old address stops working. Claimed under the lock account creation
   * takes for the address.
   */
  setEmailByOperator(did: string, email: string, now: number): Promise<"updated" | "taken" | "no-account">;
  /** The account's email settings (getSession, the emailed sign-in code: docs/decisions/0047). */
  emailSettings(did: string): Promise<EmailSettings | undefined>;
  /**
   * Marks the account's address confirmed, if it still is `email` (the address a confirmation code was sent to:
   * docs/decisions/0052); false otherwise.
   */
  confirmEmail(did: string, email: string, now: number): Promise<boolean>;
  /** Turns the emailed sign-in code of password sessions on or off (docs/decisions/0047). */
  setEmailAuthFactor(did: string, on: boolean, now: number): Promise<void>;
  /** Changes the handle unless another account holds it (checked and written atomically). False: taken. */
  updateHandle(did: string, handle: string, now: number): Promise<boolean>;
  /**
   * Sets the password hash; with `signOut`, also ends every other session of the account in the same step, so that
   * no session made with the old password outlives the change (docs/decisions/0007).
   */
  setPasswordHash(did: string, passwordHash: string, now: number, signOut?: { keepSessionIdHash: string }): Promise<void>;
  /**
   * The operator's password reset (com.atproto.admin.updateAccountPassword, docs/decisions/0051): sets the hash and,
   * in the same step, ends every browser session and every app's grant of the account. False: no such account.
   */
  resetPasswordByOperator(did: string, passwordHash: string, now: number): Promise<boolean>;
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
