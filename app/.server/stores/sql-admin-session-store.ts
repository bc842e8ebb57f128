import type { AdminSessionStore, StoredAdminSession } from "../admin/admin-session-store.ts";
import { tables } from "../db/rows.generated.ts";
import { at, get, run, sql, type Database, type Program } from "../db/sql.ts";
import { expiredRowsCleanup } from "./expired-rows.ts";

const cleanupSessions = expiredRowsCleanup("AdminSession", "idHash");

/** The operator page's sessions (docs/decisions/0051). */
export class SqlAdminSessionStore implements AdminSessionStore {
  constructor(private readonly db: Database) {}

  async create(session: StoredAdminSession) {
    return this.db.transaction(function* (): Program<void> {
      yield* run(cleanupSessions(session.createdAt));
      yield* run(sql`INSERT INTO "AdminSession" ("idHash", "passwordTag", "createdAt", "expiresAt")
        VALUES (${session.idHash}, ${session.passwordTag}, ${at(session.createdAt)}, ${at(session.expiresAt)})`);
    });
  }

  async find(idHash: string, now: number) {
    return this.db.execute(function* (): Program<StoredAdminSession | undefined> {
      const row = yield* get(tables.AdminSession, sql`SELECT * FROM "AdminSession" WHERE "idHash" = ${idHash}`);
      if (!row) return undefined;
      if (row.expiresAt <= now) {
        yield* run(sql`DELETE FROM "AdminSession" WHERE "idHash" = ${idHash}`);
        return undefined;
      }
      return row;
    });
  }

  async delete(idHash: string) {
    return this.db.execute(function* (): Program<void> {
      yield* run(sql`DELETE FROM "AdminSession" WHERE "idHash" = ${idHash}`);
    });
  }
}
