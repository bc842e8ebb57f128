import type Database from "better-sqlite3";
import type { GrantStore } from "../oauth/token/grant-store.ts";

export type LockdownResult = { passkeys: number; otherSessions: number; apps: number };

/**
 * "Secure your account" after a password change (docs/decisions/0007):
 * removes every passkey, signs out every other browser and, when asked,
 * disconnects every app (grants, their tokens and unredeemed codes, and the
 * remembered consent). All of it or nothing: one synchronous transaction on
 * the better-sqlite3 connection (docs/decisions/0002), so a failure half-way
 * never leaves, say, the passkeys gone but a planted session alive.
 */
export class AccountLockdown {
  private readonly run: (accountDid: string, keepSessionIdHash: string, disconnectApps: boolean) => LockdownResult;

  constructor(db: Database.Database, grants: GrantStore) {
    const deletePasskeys = db.prepare(`DELETE FROM "Passkey" WHERE accountDid = ?`);
    const deleteOtherSessions = db.prepare(`DELETE FROM "BrowserSession" WHERE accountDid = ? AND idHash <> ?`);
    const deleteConsents = db.prepare(`DELETE FROM "AuthorizedClient" WHERE accountDid = ?`);
    const transaction = db.transaction((accountDid: string, keepSessionIdHash: string, disconnectApps: boolean): LockdownResult => {
      const passkeys = deletePasskeys.run(accountDid).changes;
      const otherSessions = deleteOtherSessions.run(accountDid, keepSessionIdHash).changes;
      let apps = 0;
      if (disconnectApps) {
        grants.revokeAccountGrants(accountDid);
        apps = deleteConsents.run(accountDid).changes;
      }
      return { passkeys, otherSessions, apps };
    });
    this.run = (accountDid, keepSessionIdHash, disconnectApps) => transaction.immediate(accountDid, keepSessionIdHash, disconnectApps);
  }

  /** Keeps only this browser signed in (`keepSessionIdHash`). */
  secure(accountDid: string, keepSessionIdHash: string, options: { disconnectApps: boolean }): LockdownResult {
    return this.run(accountDid, keepSessionIdHash, options.disconnectApps);
  }
}
