import { createHash, randomUUID } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, existsSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";

/**
 * Applies prisma/migrations/* to the database, recording each in Prisma's own
 * `_prisma_migrations` table (same columns, SHA-256 checksum of migration.sql)
 * so that `prisma migrate deploy` and `prisma migrate status` recognise the
 * result. Done in-process because starting the Prisma CLI on every start (and
 * in every test server) costs seconds. See docs/decisions/0001.
 */

const MIGRATIONS_TABLE_DDL = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    TEXT PRIMARY KEY NOT NULL,
    "checksum"              TEXT NOT NULL,
    "finished_at"           DATETIME,
    "migration_name"        TEXT NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        DATETIME,
    "started_at"            DATETIME NOT NULL DEFAULT current_timestamp,
    "applied_steps_count"   INTEGER UNSIGNED NOT NULL DEFAULT 0
)`;

export type MigrationResult = { applied: string[] };

export function defaultMigrationsDir(): string {
  return path.resolve(process.cwd(), "prisma", "migrations");
}

export function ensureDatabaseFolder(databasePath: string): void {
  if (databasePath === ":memory:") return;
  mkdirSync(path.dirname(path.resolve(databasePath)), { recursive: true });
}

export function migrateDatabase(databasePath: string, migrationsDir = defaultMigrationsDir()): MigrationResult {
  ensureDatabaseFolder(databasePath);
  const db = new Database(databasePath);
  try {
    db.pragma("journal_mode = WAL");
    db.pragma("busy_timeout = 5000");
    db.exec(MIGRATIONS_TABLE_DDL);
    const done = new Set(
      db
        .prepare(`SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`)
        .all()
        .map((row) => (row as { migration_name: string }).migration_name),
    );
    const applied: string[] = [];
    const recorded = db.prepare(`SELECT 1 FROM "_prisma_migrations" WHERE migration_name = ? AND finished_at IS NOT NULL AND rolled_back_at IS NULL`);
    const record = db.prepare(
      `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count)
       VALUES (?, ?, ?, ?, NULL, NULL, ?, 1)`,
    );
    for (const name of listMigrations(migrationsDir)) {
      if (done.has(name)) continue;
      const sql = readFileSync(path.join(migrationsDir, name, "migration.sql"), "utf8");
      const checksum = createHash("sha256").update(sql).digest("hex");
      const startedAt = new Date().toISOString();
      // SQLite's procedure for schema changes (https://www.sqlite.org/lang_altertable.html#otheralter): foreign keys
      // off OUTSIDE the transaction (inside one the pragma is a no-op, and Prisma's table redefinitions would then
      // cascade the DROP TABLE of a parent into its children's rows), the change, a foreign_key_check, commit, on again.
      db.pragma("foreign_keys = OFF");
      try {
        // One transaction per migration: a failure leaves no half-applied schema. Another process that started at the
        // same moment may have applied it while this one waited for the write lock: then there is nothing to do.
        const ran = db.transaction(() => {
          if (recorded.get(name)) return false;
          db.exec(sql);
          const violations = db.pragma("foreign_key_check") as unknown[];
          if (violations.length) throw new Error(`Migration ${name} leaves ${violations.length} rows with broken foreign keys`);
          record.run(randomUUID(), checksum, new Date().toISOString(), name, startedAt);
          return true;
        }).immediate();
        if (ran) applied.push(name);
      } finally {
        db.pragma("foreign_keys = ON");
      }
    }
    return { applied };
  } finally {
    db.close();
  }
}

/** The migration folders of `dir` (each holds a migration.sql), in the order they apply: their names sort by date. */
export function listMigrations(dir: string): string[] {
  if (!existsSync(dir)) throw new Error(`No migrations folder at ${dir}`);
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(path.join(dir, entry.name, "migration.sql")))
    .map((entry) => entry.name)
    .sort();
}
