import type { AppPasswordStore, ListedAppPassword, StoredAppPassword } from "../accounts/app-password-store.ts";
import { tables } from "../db/rows.generated.ts";
import { all, at, get, lock, run, sql, type Database, type Program } from "../db/sql.ts";
import { APP_PASSWORD_ACCESS, PRIVILEGED_APP_PASSWORD_ACCESS } from "../accounts/session-jwt.ts";
import { lockCredentials } from "./locks.ts";

const LISTED_ROW = tables.AppPassword.pick("id", "name", "privileged", "createdAt", "lastUsedAt");

/** App passwords (docs/decisions/0047): hashed, one name per account; revoking one ends its sessions by cascade. */
export class SqlAppPasswordStore implements AppPasswordStore {
  constructor(private readonly db: Database) {}

  async insert(appPassword: StoredAppPassword) {
    return this.db.transaction(function* (): Program<boolean> {
      // Two creations of one name at once: the lock orders them, so the second finds the first's row (no unique-key
      // failure to catch, which would abort the transaction on PostgreSQL).
      yield* lock(`app-password:${appPassword.accountDid}:${appPassword.name}`);
      const taken = yield* get(tables.AppPassword.pick("id"), sql`SELECT "id" FROM "AppPassword" WHERE "accountDid" = ${appPassword.accountDid} AND "name" = ${appPassword.name}`);
      if (taken) return false;
      yield* run(sql`INSERT INTO "AppPassword" ("id", "accountDid", "name", "passwordHash", "privileged", "createdAt", "lastUsedAt")
        VALUES (${appPassword.id}, ${appPassword.accountDid}, ${appPassword.name}, ${appPassword.passwordHash}, ${appPassword.privileged},
          ${at(appPassword.createdAt)}, ${at(appPassword.lastUsedAt)})`);
      return true;
    });
  }

  async find(accountDid: string, passwordHash: string) {
    return this.db.execute(function* (): Program<StoredAppPassword | undefined> {
      return yield* get(tables.AppPassword, sql`SELECT * FROM "AppPassword" WHERE "accountDid" = ${accountDid} AND "passwordHash" = ${passwordHash}`);
    });
  }

  async list(accountDid: string) {
    return this.db.execute(function* (): Program<ListedAppPassword[]> {
      return yield* all(LISTED_ROW, sql`SELECT "id", "name", "privileged", "createdAt", "lastUsedAt" FROM "AppPassword"
        WHERE "accountDid" = ${accountDid} ORDER BY "createdAt" DESC, "name"`);
    });
  }

  async revoke(accountDid: string, name: string) {
    return this.db.transaction(function* (): Program<boolean> {
      // Under the credentials lock that a sign-in with it takes to store its session (SqlPasswordSessionStore): the
      // sign-in is ended with the rest, or finds the app password gone. Its sessions and tokens go by cascade.
      yield* lockCredentials(accountDid);
      // Its history goes with its access (docs/decisions/0053).
      yield* run(sql`DELETE FROM "AppActivity" WHERE "accountDid" = ${accountDid}
        AND "app" = (SELECT 'app-password:' || "id" FROM "AppPassword" WHERE "accountDid" = ${accountDid} AND "name" = ${name})`);
      return (yield* run(sql`DELETE FROM "AppPassword" WHERE "accountDid" = ${accountDid} AND "name" = ${name}`)) > 0;
    });
  }

  async dropPrivilege(accountDid: string, id: string) {
    return this.db.transaction(function* (): Program<boolean> {
      yield* lockCredentials(accountDid);
      const dropped = yield* run(sql`UPDATE "AppPassword" SET "privileged" = ${false} WHERE "accountDid" = ${accountDid} AND "id" = ${id} AND "privileged" = ${true}`);
      if (dropped === 0) return false;
      // Its sessions at once: every call reads its session's scope, and a refresh issues the session's (docs/decisions/0047).
      yield* run(sql`UPDATE "PasswordSession" SET "scope" = ${APP_PASSWORD_ACCESS} WHERE "appPasswordId" = ${id} AND "scope" = ${PRIVILEGED_APP_PASSWORD_ACCESS}`);
      return true;
    });
  }
}
