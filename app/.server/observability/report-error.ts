import { isFromDatabase } from "../db/sql.ts";
import type { Logger } from "./logger.ts";
import type { Metrics } from "./metrics.ts";

/**
 * Reports an error nobody expected (a bug, a database failure): logged at
 * `error` with its stack, tagged with the request id when there is one, and
 * counted in `atrium_database_errors_total` when the database raised it. The
 * client gets a generic answer; details go only to the log. `message` is a
 * fixed text of this server ("Unexpected error while handling a request").
 */
export type ErrorReporter = (message: string, error: unknown, requestId?: string | null) => void;

export function errorReporter(log: Logger, metrics: Pick<Metrics, "databaseError">): ErrorReporter {
  return (message, error, requestId) => {
    if (isDatabaseError(error)) metrics.databaseError();
    log.error(requestId ? { err: error, reqId: requestId } : { err: error }, message);
  };
}

/**
 * Whether the database raised `error` (or one of its causes): better-sqlite3's
 * SqliteError (codes SQLITE_*), anything the PostgreSQL engine passed on from
 * the pool or the server (marked by app/.server/db/postgres-database.ts: a
 * failed statement, a refused or lost connection), Prisma's errors (the CLI
 * tools).
 */
export function isDatabaseError(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const { name, code } = current as { name?: unknown; code?: unknown };
    if (name === "SqliteError" || name === "DriverAdapterError" || isFromDatabase(current)) return true;
    if (typeof name === "string" && name.startsWith("PrismaClient")) return true;
    if (typeof code === "string" && code.startsWith("SQLITE_")) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
