import type { AccountClash, AccountPageQuery, AccountProfile, AccountStore, EmailSettings, LockdownResult, OperatorAccountRow, SpentInvite, StoredAccount } from "../accounts/account-store.ts";
import { sealedKeyId } from "../accounts/key-encryption.ts";
import { tables } from "../db/rows.generated.ts";
import { all, at, Fragment, get, run, sql, statementOf, type Database, type Program } from "../db/sql.ts";
import { revokeAccountGrants } from "./sql-grant-store.ts";
import { releaseBlobsOfAccount } from "./sql-blob-store.ts";
import { spendInviteUse } from "./sql-invite-store.ts";
import { forgetTypedCode } from "./sql-typed-code-store.ts";
import { lockCredentials, lockIdentifiers } from "./locks.ts";

/** What an account is, without its password hash or private signing key (AccountStore.profile). */
const PROFILE_ROW = tables.Account.pick("did", "handle", "email", "emailConfirmedAt", "createdAt");
/** What the operator sees of an account (docs/decisions/0051). */
const OPERATOR_ROW = tables.Account.pick("did", "handle", "email", "emailConfirmedAt", "createdAt", "lastSignInAt", "deactivatedAt", "takendownAt", "takedownRef");
const OPERATOR_COLUMNS = '"did", "handle", "email", "emailConfirmedAt", "createdAt", "lastSignInAt", "deactivatedAt", "takendownAt", "takedownRef"';
const OPERATOR_COLUMNS_FRAGMENT = new Fragment({ sqlite: OPERATOR_COLUMNS, postgresql: OPERATOR_COLUMNS });

/**
 * A page of the accounts (AccountStore.page), in handle order, keyset-paged on the handle: its unique index serves both
 * the order and the cursor, in the database's own collation whatever its locale, so each page reads `limit` rows
 * however many accounts there are (their plans are tested: sql-account-store.test.ts). The search is a prefix of the
 * handle, the email or the DID (LIKE, with % and _ escaped: identifiers are stored in lower case, and SQLite's LIKE
 * ignores case only in ASCII, where they are).
 */
export const ACCOUNT_PAGE_SQL = {
  all: `SELECT ${OPERATOR_COLUMNS} FROM "Account" WHERE "handle" > ? ORDER BY "handle" LIMIT ?`,
  prefix: `SELECT ${OPERATOR_COLUMNS} FROM "Account" WHERE "handle" > ? AND ("handle" LIKE ? ESCAPE '\\' OR "email" LIKE ? ESCAPE '\\' OR "did" LIKE ? ESCAPE '\\')
    ORDER BY "handle" LIMIT ?`,
};
const pageOfAll = statementOf(ACCOUNT_PAGE_SQL.all);
const pageOfPrefix = statementOf(ACCOUNT_PAGE_SQL.prefix);

/** A LIKE pattern for values that start with `prefix`. */
function startsWith(prefix: string): string {
  return `${prefix.replace(/[\\%_]/g, (character) => `\\${character}`)}%`;
}

/**
 * Ends every way in the account has open, as a step of a caller's transaction that holds the credentials lock: every
 * browser session, every password session (with its tokens, by cascade), and every app's grant with its tokens and
 * unredeemed codes (codes first: a code exchange that holds a code's row finishes before the grants are deleted, so
 * its grant goes too). A takedown and the operator's password reset run it (docs/decisions/0051).
 */
export function* endSignIns(did: string): Program<void> {
  yield* run(sql`DELETE FROM "BrowserSession" WHERE "accountDid" = ${did}`);
  yield* endPasswordSessions(did);
  yield* revokeAccountGrants(did);
}

/**
 * Ends every password session of the account, those of app passwords too (their tokens follow by cascade): a password
 * change's step, as the reference revokes every refresh token on one (docs/decisions/0047). App passwords stay.
 */
export function* endPasswordSessions(did: string): Program<number> {
  return yield* run(sql`DELETE FROM "PasswordSession" WHERE "accountDid" = ${did}`);
}

/**
 * The account lockdown, as a step of a caller's transaction: ends every session of the account but
 * `keepSessionIdHash` (all of them without it) and, when asked, removes its passkeys and disconnects its apps
 * (grants, their tokens and unredeemed codes, remembered consent; app passwords and every password session:
 * docs/decisions/0047). "Secure your account" (docs/decisions/0007) and a password reset by email
 * (docs/decisions/0020) both run it.
 */
export function* lockdown(
  did: string,
  options: { keepSessionIdHash?: string; removePasskeys: boolean; disconnectApps: boolean },
): Program<LockdownResult> {
  yield* lockCredentials(did);
  const passkeys = options.removePasskeys ? yield* run(sql`DELETE FROM "Passkey" WHERE "accountDid" = ${did}`) : 0;
  const otherSessions =
    options.keepSessionIdHash === undefined
      ? yield* run(sql`DELETE FROM "BrowserSession" WHERE "accountDid" = ${did}`)
      : yield* run(sql`DELETE FROM "BrowserSession" WHERE "accountDid" = ${did} AND "idHash" <> ${options.keepSessionIdHash}`);
  let apps = 0;
  if (options.disconnectApps) {
    yield* revokeAccountGrants(did);
    apps = yield* run(sql`DELETE FROM "AuthorizedClient" WHERE "accountDid" = ${did}`);
    // Apps signed in with a password are apps too: their app passwords go, and with them their sessions.
    yield* run(sql`DELETE FROM "AppPassword" WHERE "accountDid" = ${did}`);
    yield* endPasswordSessions(did);
    // Their histories go with their access (docs/decisions/0053).
    yield* run(sql`DELETE FROM "AppActivity" WHERE "accountDid" = ${did}`);
  }
  return { passkeys, otherSessions, apps };
}

export class SqlAccountStore implements AccountStore {
  constructor(private readonly db: Database) {}

  async insert(account: StoredAccount, invite?: SpentInvite) {
    return this.db.transaction(function* (): Program<AccountClash | undefined> {
      yield* lockIdentifiers(account.did, account.handle, account.email);
      const clash = yield* get(tables.Account.pick("did", "handle", "email"), sql`SELECT "did", "handle", "email" FROM "Account"
        WHERE "did" = ${account.did} OR "handle" = ${account.handle} OR "email" = ${account.email} LIMIT 1`);
      if (clash) return clash.handle === account.handle ? "handle" : clash.email === account.email ? "email" : "did";
      // Last of the checks, so that a refusal for a taken handle spends no use; nothing is written before it.
      if (invite && !(yield* spendInviteUse(invite.code, account.did, account.createdAt))) return "invite";
      yield* run(sql`INSERT INTO "Account" ("did", "handle", "email", "passwordHash", "emailConfirmedAt", "signingKey", "signingKeyEncryptedWith", "deactivatedAt", "createdAt", "updatedAt")
        VALUES (${account.did}, ${account.handle}, ${account.email}, ${account.passwordHash}, ${at(account.emailConfirmedAt)},
          ${account.signingKey}, ${sealedKeyId(account.signingKey)}, ${at(account.deactivatedAt ?? null)}, ${at(account.createdAt)}, ${at(account.createdAt)})`);
      return undefined;
    });
  }

  async find(by: "did" | "handle" | "email", value: string) {
    return this.db.execute(function* (): Program<StoredAccount | undefined> {
      if (by === "did") return yield* get(tables.Account, sql`SELECT * FROM "Account" WHERE "did" = ${value}`);
      if (by === "handle") return yield* get(tables.Account, sql`SELECT * FROM "Account" WHERE "handle" = ${value}`);
      return yield* get(tables.Account, sql`SELECT * FROM "Account" WHERE "email" = ${value}`);
    });
  }

  async profile(by: "did" | "handle" | "email", value: string) {
    return this.db.execute(function* (): Program<AccountProfile | undefined> {
      if (by === "did") return yield* get(PROFILE_ROW, sql`SELECT "did", "handle", "email", "emailConfirmedAt", "createdAt" FROM "Account" WHERE "did" = ${value}`);
      if (by === "handle") return yield* get(PROFILE_ROW, sql`SELECT "did", "handle", "email", "emailConfirmedAt", "createdAt" FROM "Account" WHERE "handle" = ${value}`);
      return yield* get(PROFILE_ROW, sql`SELECT "did", "handle", "email", "emailConfirmedAt", "createdAt" FROM "Account" WHERE "email" = ${value}`);
    });
  }

  async page(query: AccountPageQuery) {
    const after = query.afterHandle ?? "";
    const { prefix, limit } = query;
    return this.db.execute(function* (): Program<OperatorAccountRow[]> {
      if (prefix === undefined) return yield* all(OPERATOR_ROW, pageOfAll(after, limit));
      const pattern = startsWith(prefix);
      return yield* all(OPERATOR_ROW, pageOfPrefix(after, pattern, pattern, pattern, limit));
    });
  }

  async operatorView(dids: readonly string[]) {
    return this.db.execute(function* (): Program<OperatorAccountRow[]> {
      const found: OperatorAccountRow[] = [];
      for (const did of new Set(dids)) {
        const row = yield* get(OPERATOR_ROW, sql`SELECT ${OPERATOR_COLUMNS_FRAGMENT} FROM "Account" WHERE "did" = ${did}`);
        if (row) found.push(row);
      }
      return found;
    });
  }

  async setEmailByOperator(did: string, email: string, now: number) {
    return this.db.transaction(function* (): Program<"updated" | "taken" | "no-account"> {
      // The lock account creation and an email change take for the address (SqlEmailUpdateStore.confirm).
      yield* lockIdentifiers(email);
      const holder = yield* get(tables.Account.pick("did"), sql`SELECT "did" FROM "Account" WHERE "email" = ${email}`);
      if (holder && holder.did !== did) return "taken";
      const changed = yield* run(sql`UPDATE "Account" SET "email" = ${email}, "emailConfirmedAt" = NULL, "updatedAt" = ${at(now)} WHERE "did" = ${did}`);
      if (changed === 0) return "no-account";
      // What was mailed to the old address stops working with it, as after the person's own change.
      yield* run(sql`DELETE FROM "RecoveryCode" WHERE "accountDid" = ${did} AND "usedAt" IS NULL`);
      yield* forgetTypedCode(did, "recovery");
      yield* forgetTypedCode(did, "account-deletion");
      yield* forgetTypedCode(did, "email-update");
      return "updated";
    });
  }

  async emailSettings(did: string) {
    return this.db.execute(function* (): Program<EmailSettings | undefined> {
      return yield* get(tables.Account.pick("email", "emailConfirmedAt", "emailAuthFactor"), sql`SELECT "email", "emailConfirmedAt", "emailAuthFactor" FROM "Account" WHERE "did" = ${did}`);
    });
  }

  async confirmEmail(did: string, email: string, now: number) {
    return this.db.execute(function* (): Program<boolean> {
      // One conditional statement: a code sent to an address the account no longer has confirms nothing.
      return (yield* run(sql`UPDATE "Account" SET "emailConfirmedAt" = ${at(now)}, "updatedAt" = ${at(now)} WHERE "did" = ${did} AND "email" = ${email}`)) > 0;
    });
  }

  async setEmailAuthFactor(did: string, on: boolean, now: number) {
    return this.db.execute(function* (): Program<void> {
      yield* run(sql`UPDATE "Account" SET "emailAuthFactor" = ${on}, "updatedAt" = ${at(now)} WHERE "did" = ${did}`);
    });
  }

  async updateHandle(did: string, handle: string, now: number) {
    return this.db.transaction(function* (): Program<boolean> {
      yield* lockIdentifiers(handle);
      const holder = yield* get(tables.Account.pick("did"), sql`SELECT "did" FROM "Account" WHERE "handle" = ${handle}`);
      if (holder && holder.did !== did) return false;
      yield* run(sql`UPDATE "Account" SET "handle" = ${handle}, "updatedAt" = ${at(now)} WHERE "did" = ${did}`);
      return true;
    });
  }

  async setPasswordHash(did: string, passwordHash: string, now: number, signOut?: { keepSessionIdHash: string }) {
    return this.db.transaction(function* (): Program<void> {
      yield* lockCredentials(did);
      yield* run(sql`UPDATE "Account" SET "passwordHash" = ${passwordHash}, "updatedAt" = ${at(now)} WHERE "did" = ${did}`);
      yield* endPasswordSessions(did);
      if (signOut) yield* run(sql`DELETE FROM "BrowserSession" WHERE "accountDid" = ${did} AND "idHash" <> ${signOut.keepSessionIdHash}`);
    });
  }

  async resetPasswordByOperator(did: string, passwordHash: string, now: number) {
    return this.db.transaction(function* (): Program<boolean> {
      // The lock a sign-in stores its session under (SqlSessionStore.create): one on the old password that is still
      // being checked signs in nobody.
      yield* lockCredentials(did);
      const changed = yield* run(sql`UPDATE "Account" SET "passwordHash" = ${passwordHash}, "updatedAt" = ${at(now)} WHERE "did" = ${did}`);
      if (changed === 0) return false;
      yield* endSignIns(did);
      return true;
    });
  }

  async replace(previousDid: string, account: StoredAccount) {
    return this.db.transaction(function* (): Program<void> {
      yield* lockIdentifiers(previousDid, account.did, account.handle, account.email);
      // Its blobs go with it; their copies are deleted by later sweeps once no account has them (docs/decisions/0043).
      yield* releaseBlobsOfAccount(previousDid, account.createdAt);
      yield* run(sql`DELETE FROM "Account" WHERE "did" = ${previousDid}`);
      yield* run(sql`INSERT INTO "Account" ("did", "handle", "email", "passwordHash", "emailConfirmedAt", "signingKey", "signingKeyEncryptedWith", "deactivatedAt", "createdAt", "updatedAt")
        VALUES (${account.did}, ${account.handle}, ${account.email}, ${account.passwordHash}, ${at(account.emailConfirmedAt)},
          ${account.signingKey}, ${sealedKeyId(account.signingKey)}, ${at(account.deactivatedAt ?? null)}, ${at(account.createdAt)}, ${at(account.createdAt)})`);
    });
  }

  async secure(did: string, keepSessionIdHash: string, disconnectApps: boolean) {
    return this.db.transaction(function* (): Program<LockdownResult> {
      return yield* lockdown(did, { keepSessionIdHash, removePasskeys: true, disconnectApps });
    });
  }
}
