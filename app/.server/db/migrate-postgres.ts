import { createHash, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { listMigrations } from "./migrate.ts";

/**
 * Applies prisma/postgresql/migrations/* to a PostgreSQL database, the
 * counterpart of migrate.ts for SQLite (docs/decisions/0015): each migration is
 * recorded in Prisma's own `_prisma_migrations` table (Prisma's PostgreSQL
 * columns, SHA-256 checksum of migration.sql), so `prisma migrate status` and
 * `prisma migrate deploy` recognise the result.
 *
 * Several processes may start at the same moment on one database. The whole
 * run holds a session advisory lock on one connection, with the key Prisma's
 * own `migrate deploy` takes, so appliers (ours and Prisma's) run one after
 * the other and the second finds every migration recorded. Each migration is
 * one transaction (PostgreSQL's DDL is transactional): a failure leaves
 * nothing of it behind, and the error names it.
 */

/** The key of Prisma Migrate's advisory lock (`SELECT pg_advisory_lock(72707369)` in its schema engine). */
export const MIGRATION_LOCK_KEY = 72707369;

// Prisma's DDL for PostgreSQL (its schema engine creates the table with exactly these columns).
const MIGRATIONS_TABLE_DDL = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

export type PostgresMigrationResult = { applied: string[] };

export function defaultPostgresMigrationsDir(): string {
  return path.resolve(process.cwd(), "prisma", "postgresql", "migrations");
}

export async function migratePostgres(databaseUrl: string, migrationsDir = defaultPostgresMigrationsDir()): Promise<PostgresMigrationResult> {
  const migrations = listMigrations(migrationsDir);
  const client = new pg.Client({ connectionString: databaseUrl, application_name: "atrium-migrate" });
  // A connection lost mid-run rejects the pending query; without a listener the same error would also be thrown as
  // an unhandled 'error' event.
  client.on("error", () => undefined);
  await client.connect();
  try {
    // A session lock, not a transaction one: it spans the one transaction per migration below. Closing the
    // connection releases it too, should this process die half-way.
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
    try {
      await client.query(MIGRATIONS_TABLE_DDL);
      const { rows } = await client.query<{ migration_name: string }>(
        `SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
      );
      const done = new Set(rows.map((row) => row.migration_name));
      const applied: string[] = [];
      for (const name of migrations) {
        if (done.has(name)) continue;
        const sql = readFileSync(path.join(migrationsDir, name, "migration.sql"), "utf8");
        const checksum = createHash("sha256").update(sql).digest("hex");
        const startedAt = new Date();
        await client.query("BEGIN");
        try {
          await client.query(sql);
          await client.query(
            `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, logs, rolled_back_at, started_at, applied_steps_count)
             VALUES ($1, $2, clock_timestamp(), $3, NULL, NULL, $4, 1)`,
            [randomUUID(), checksum, name, startedAt],
          );
          await client.query("COMMIT");
        } catch (error) {
          await client.query("ROLLBACK").catch(() => undefined);
          throw new Error(`Migration ${name} failed and was rolled back: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
        }
        applied.push(name);
      }
      return { applied };
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]).catch(() => undefined);
    }
  } finally {
    await client.end();
  }
}
