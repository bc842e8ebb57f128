import { tables } from "../db/rows.generated.ts";
import { at, get, run, sql, type Database, type Program } from "../db/sql.ts";
import type { CachedPermissionSet, PermissionSetCache } from "../oauth/scopes/permission-sets/permission-set-cache.ts";
import { expiredRowsCleanup } from "./expired-rows.ts";

const cleanupSets = expiredRowsCleanup("PermissionSetCache", "nsid");

/** The permission-set lexicons the network resolver fetched (table "PermissionSetCache"). */
export class SqlPermissionSetCache implements PermissionSetCache {
  constructor(private readonly db: Database) {}

  async get(nsid: string, now: number) {
    return this.db.execute(function* (): Program<CachedPermissionSet | undefined> {
      const row = yield* get(tables.PermissionSetCache, sql`SELECT "nsid", "document", "fetchedAt", "expiresAt" FROM "PermissionSetCache" WHERE "nsid" = ${nsid}`);
      if (!row) return undefined;
      if (row.expiresAt <= now) {
        yield* run(sql`DELETE FROM "PermissionSetCache" WHERE "nsid" = ${nsid} AND "expiresAt" <= ${at(now)}`);
        return undefined;
      }
      let document: unknown;
      try {
        document = JSON.parse(row.document);
      } catch {
        yield* run(sql`DELETE FROM "PermissionSetCache" WHERE "nsid" = ${nsid}`);
        return undefined;
      }
      return { nsid: row.nsid, document, fetchedAt: row.fetchedAt, expiresAt: row.expiresAt };
    });
  }

  async put(entry: CachedPermissionSet) {
    const document = JSON.stringify(entry.document);
    return this.db.transaction(function* (): Program<void> {
      yield* run(cleanupSets(entry.fetchedAt));
      yield* run(sql`INSERT INTO "PermissionSetCache" ("nsid", "document", "fetchedAt", "expiresAt")
        VALUES (${entry.nsid}, ${document}, ${at(entry.fetchedAt)}, ${at(entry.expiresAt)})
        ON CONFLICT ("nsid") DO UPDATE SET "document" = excluded."document", "fetchedAt" = excluded."fetchedAt", "expiresAt" = excluded."expiresAt"`);
    });
  }

  async delete(nsid: string) {
    return this.db.execute(function* (): Program<void> {
      yield* run(sql`DELETE FROM "PermissionSetCache" WHERE "nsid" = ${nsid}`);
    });
  }
}
