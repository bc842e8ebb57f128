/** What an account has allowed a client, across its approvals. Times are epoch milliseconds. */
export type StoredConsent = { clientId: string; scope: string; createdAt: number; updatedAt: number };

export interface ConsentStore {
  /** Adds these scope values to what the account allowed the client; concurrent approvals never lose one another's values. */
  remember(accountDid: string, clientId: string, scopeValues: readonly string[], now: number): Promise<void>;
  find(accountDid: string, clientId: string): Promise<StoredConsent | undefined>;
  /** The account's remembered consents, most recently changed first. */
  list(accountDid: string): Promise<StoredConsent[]>;
  /**
   * Disconnects the app, in one atomic step: ends every grant the account
   * gave it (with their tokens), the codes not yet redeemed, and the
   * remembered consent. What ended.
   */
  forget(accountDid: string, clientId: string): Promise<{ grants: number; consent: boolean }>;
}
