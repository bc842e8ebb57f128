import type { DatabaseSettings } from "../config.ts";
import { PostgresDatabase } from "./postgres-database.ts";
import type { Database } from "./sql.ts";
import { SqliteDatabase } from "./sqlite-database.ts";

/**
 * Opens the database DATABASE_URL names: one SQLite file (the embedded
 * default) or a PostgreSQL database shared by several server processes
 * (docs/decisions/0017). Only the engines know which; every store runs the
 * same programs on either. Errors of idle PostgreSQL connections go to
 * `onIdleError` (logged by the caller), never to an unhandled event.
 */
export function openDatabase(settings: DatabaseSettings, onIdleError?: (error: Error) => void): Database {
  if (settings.engine === "sqlite") return new SqliteDatabase(settings.path);
  return new PostgresDatabase(settings.url, { poolSize: settings.poolSize, snapshotPoolSize: settings.snapshotPoolSize, onIdleError });
}
