/** A registered passkey (WebAuthn credential). Times are epoch milliseconds. */
export type StoredPasskey = {
  credentialId: string;
  accountDid: string;
  name: string;
  publicKey: Uint8Array;
  counter: number;
  /** JSON array of the authenticator's transports, as it reported them. */
  transports: string | null;
  deviceType: string;
  backedUp: boolean;
  createdAt: number;
  lastUsedAt: number | null;
};

export interface PasskeyStore {
  /** Stores the passkey; false when its credential ID is already registered (to any account). */
  insert(passkey: StoredPasskey): Promise<boolean>;
  find(credentialId: string): Promise<StoredPasskey | undefined>;
  /** The account's passkeys, oldest first. */
  list(accountDid: string): Promise<StoredPasskey[]>;
  /**
   * After a verified sign-in: the authenticator's new counter and backup state, in one step that re-checks the counter
   * against the stored one. False, and nothing written, when the counter did not advance (another sign-in with the
   * same or a later counter was recorded meanwhile: WebAuthn's sign of a cloned authenticator) or the passkey is gone.
   */
  recordUse(credentialId: string, counter: number, backedUp: boolean, now: number): Promise<boolean>;
  /** False when the account has no such passkey. */
  rename(accountDid: string, credentialId: string, name: string): Promise<boolean>;
  /** False when the account has no such passkey. */
  remove(accountDid: string, credentialId: string): Promise<boolean>;
  /** Whether the account (or, without one, any account) has a passkey. */
  exists(accountDid?: string): Promise<boolean>;
}
