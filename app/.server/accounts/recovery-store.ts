/** A password-recovery code as stored: only its SHA-256 (docs/decisions/0020). Times are epoch milliseconds. */
export type StoredRecoveryCode = { codeHash: string; accountDid: string; createdAt: number; expiresAt: number };

/** What a reset changed, all in one transaction. */
export type RecoveryResult = { accountDid: string; sessions: number; passkeys: number; apps: number };

/** What a reset does besides setting the password and ending every session of the account. */
export type RecoveryReset = { passwordHash: string; removePasskeys: boolean; disconnectApps: boolean };

export interface RecoveryStore {
  /** Stores a new code; the account's earlier unused codes stop working (and a few expired rows go). */
  issue(code: StoredRecoveryCode): Promise<void>;
  /** What `issue` does when no account is named: only the few expired rows go (the same kind of step, see PasswordRecovery). */
  prune(now: number): Promise<void>;
  /** The account of a live, unused code (to show the form); undefined otherwise. Changes nothing. */
  find(codeHash: string, now: number): Promise<string | undefined>;
  /**
   * The single-use step, atomic: spends the code if it is live and unused, sets the password, ends every session
   * of the account and its other codes, and when asked removes its passkeys and disconnects its apps. Undefined,
   * and nothing changed, when the code is unknown, expired or spent (however many tries race).
   */
  redeem(codeHash: string, now: number, reset: RecoveryReset): Promise<RecoveryResult | undefined>;
}
