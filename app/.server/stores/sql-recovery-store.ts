import type { RecoveryReset, RecoveryResult, RecoveryStore, StoredRecoveryCode } from "../accounts/recovery-store.ts";
import { tables } from "../db/rows.generated.ts";
import { at, get, lock, run, sql, type Database, type Program } from "../db/sql.ts";
import { expiredRowsCleanup } from "./expired-rows.ts";
import { lockCredentials } from "./locks.ts";
import { endPasswordSessions, lockdown } from "./sql-account-store.ts";
import { forgetTypedCode } from "./sql-typed-code-store.ts";

const cleanupCodes = expiredRowsCleanup("RecoveryCode", "codeHash");

/** Password-recovery codes (docs/decisions/0020): stored hashed, single use, redeemed in one transaction with the reset. */
export class SqlRecoveryStore implements RecoveryStore {
  constructor(private readonly db: Database) {}

  async issue(code: StoredRecoveryCode) {
    return this.db.transaction(function* (): Program<void> {
      yield* run(cleanupCodes(code.createdAt));
      // Only the newest link of an account works. The lock orders requests for one account: on PostgreSQL two at
      // once would otherwise each delete the codes committed before them and both keep their own.
      yield* lock(`recovery-codes:${code.accountDid}`);
      yield* run(sql`DELETE FROM "RecoveryCode" WHERE "accountDid" = ${code.accountDid} AND "usedAt" IS NULL`);
      yield* run(sql`INSERT INTO "RecoveryCode" ("codeHash", "accountDid", "createdAt", "expiresAt")
        VALUES (${code.codeHash}, ${code.accountDid}, ${at(code.createdAt)}, ${at(code.expiresAt)})`);
    });
  }

  async prune(now: number) {
    return this.db.transaction(function* (): Program<void> {
      yield* run(cleanupCodes(now));
    });
  }

  async find(codeHash: string, now: number) {
    return this.db.execute(function* (): Program<string | undefined> {
      const row = yield* get(tables.RecoveryCode.pick("accountDid"), sql`SELECT "accountDid" FROM "RecoveryCode"
        WHERE "codeHash" = ${codeHash} AND "usedAt" IS NULL AND "expiresAt" > ${at(now)}`);
      return row?.accountDid;
    });
  }

  async redeem(codeHash: string, now: number, reset: RecoveryReset) {
    return this.db.transaction(function* (): Program<RecoveryResult | undefined> {
      // The conditional UPDATE decides the race (docs/decisions/0017): one caller spends the code, every other finds it spent.
      const spent = yield* get(tables.RecoveryCode.pick("accountDid"), sql`UPDATE "RecoveryCode" SET "usedAt" = ${at(now)}
        WHERE "codeHash" = ${codeHash} AND "usedAt" IS NULL AND "expiresAt" > ${at(now)} RETURNING "accountDid"`);
      if (!spent) return undefined;
      const did = spent.accountDid;
      // The credentials lock before the account's row, as every sign-in takes them (SqlSessionStore.create: the lock,
      // then its lastSignInAt). The other way round, on PostgreSQL, a reset landing among sign-ins on the old password
      // held the row while they held the lock: a deadlock, retried, lost again, and answered 500.
      yield* lockCredentials(did);
      yield* run(sql`UPDATE "Account" SET "passwordHash" = ${reset.passwordHash}, "updatedAt" = ${at(now)} WHERE "did" = ${did}`);
      yield* run(sql`DELETE FROM "RecoveryCode" WHERE "accountDid" = ${did} AND "usedAt" IS NULL`);
      // docs/decisions/0030: the code emailed with the link is spent with it.
      yield* forgetTypedCode(did, "recovery");
      const done = yield* lockdown(did, { removePasskeys: reset.removePasskeys, disconnectApps: reset.disconnectApps });
      // docs/decisions/0047: the new password ends every password session, as a password change does; after the
      // credentials lock, so that a sign-in on the old password that held it first is ended too.
      yield* endPasswordSessions(did);
      return { accountDid: did, sessions: done.otherSessions, passkeys: done.passkeys, apps: done.apps };
    });
  }
}
