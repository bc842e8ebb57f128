import type Database from "better-sqlite3";
import type { CachedPermissionSet, PermissionSetCache } from "../oauth/scopes/permission-sets/permission-set-cache.ts";
import { deleteExpiredSql } from "./expired-rows.ts";

type Row = { nsid: string; document: string; fetchedAt: number; expiresAt: number };

/** PermissionSetCache on the synchronous better-sqlite3 connection. */
export class SqlitePermissionSetCache implements PermissionSetCache {
  private readonly statements;

  constructor(db: Database.Database) {
    this.statements = {
      find: db.prepare<[string], Row>(`SELECT nsid, document, fetchedAt, expiresAt FROM "PermissionSetCache" WHERE nsid = ?`),
      upsert: db.prepare(
        `INSERT INTO "PermissionSetCache" (nsid, document, fetchedAt, expiresAt) VALUES (@nsid, @document, @fetchedAt, @expiresAt)
         ON CONFLICT (nsid) DO UPDATE SET document = excluded.document, fetchedAt = excluded.fetchedAt, expiresAt = excluded.expiresAt`,
      ),
      deleteOne: db.prepare(`DELETE FROM "PermissionSetCache" WHERE nsid = ?`),
      deleteIfExpired: db.prepare(`DELETE FROM "PermissionSetCache" WHERE nsid = ? AND expiresAt <= ?`),
      cleanup: db.prepare(
        deleteExpiredSql("PermissionSetCache", "nsid"),
      ),
    };
  }

  get(nsid: string, now: number): CachedPermissionSet | undefined {
    const row = this.statements.find.get(nsid);
    if (!row) return undefined;
    if (row.expiresAt <= now) {
      this.statements.deleteIfExpired.run(nsid, now);
      return undefined;
    }
    let document: unknown;
    try {
      document = JSON.parse(row.document);
    } catch {
      this.statements.deleteOne.run(nsid);
      return undefined;
    }
    return { nsid: row.nsid, document, fetchedAt: row.fetchedAt, expiresAt: row.expiresAt };
  }

  put(entry: CachedPermissionSet): void {
    this.statements.cleanup.run(entry.fetchedAt);
    this.statements.upsert.run({
      nsid: entry.nsid,
      document: JSON.stringify(entry.document),
      fetchedAt: entry.fetchedAt,
      expiresAt: entry.expiresAt,
    });
  }

  delete(nsid: string): void {
    this.statements.deleteOne.run(nsid);
  }
}
