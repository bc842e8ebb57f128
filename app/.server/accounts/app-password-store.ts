/** An app password as stored (docs/decisions/0047): only its hash. Times are epoch milliseconds. */
export type StoredAppPassword = {
  id: string;
  accountDid: string;
  name: string;
  /** scrypt$N$r$p$salt$hash, salted with the account's DID (accounts/app-passwords.ts). */
  passwordHash: string;
  privileged: boolean;
  createdAt: number;
  lastUsedAt: number | null;
};

/** What the account pages and listAppPasswords show of one: never its hash. */
export type ListedAppPassword = Omit<StoredAppPassword, "passwordHash" | "accountDid">;

export interface AppPasswordStore {
  /** Stores it unless the account already has one of that name (checked and written atomically): false then. */
  insert(appPassword: StoredAppPassword): Promise<boolean>;
  /** The account's app password with this hash, if any. */
  find(accountDid: string, passwordHash: string): Promise<StoredAppPassword | undefined>;
  /** The account's app passwords, newest first. */
  list(accountDid: string): Promise<ListedAppPassword[]>;
  /** Deletes the app password named so, and with it every session it signed in (at once); whether there was one. */
  revoke(accountDid: string, name: string): Promise<boolean>;
}
