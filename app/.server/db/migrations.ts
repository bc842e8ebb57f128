import type { DatabaseSettings } from "../config.ts";
import { migrateDatabase } from "./migrate.ts";
import { migratePostgres } from "./migrate-postgres.ts";

/**
 * Brings the database DATABASE_URL names up to the current schema: SQLite from
 * prisma/migrations, PostgreSQL from prisma/postgresql/migrations (one
 * schema, a migration per engine for each change: docs/decisions/0015). Both
 * are safe when several processes start at once.
 */
export async function applyMigrations(settings: DatabaseSettings): Promise<{ applied: string[] }> {
  if (settings.engine === "sqlite") return migrateDatabase(settings.path);
  return migratePostgres(settings.url);
}
