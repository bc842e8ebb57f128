import type Database from "better-sqlite3";
import type { ApiResponse } from "../http/api-response.ts";
import { jsonResponse } from "../http/api-response.ts";
import type { ErrorReporter } from "./report-error.ts";

/**
 * `GET /xrpc/_health`, what the reference atproto PDS answers to load
 * balancers: 200 `{"version": …}` while the database answers, 503 otherwise
 * (docs/decisions/0014). A load balancer polls it, so it is cheap, never
 * rate limited and never cached.
 */

/** Throws when the database does not answer. */
export type HealthCheck = () => void;

/**
 * A trivial read on the services' own connection. `SELECT 1` would not do:
 * it touches no table, and answers even when the database file is gone or
 * unreadable. Reading the schema table starts a read transaction, which
 * takes SQLite's read lock and reads the file's header whenever another
 * connection changed the file.
 */
export function databaseCheck(sqlite: Database.Database): HealthCheck {
  let statement: Database.Statement | undefined;
  return () => {
    statement ??= sqlite.prepare("SELECT 1 FROM sqlite_schema LIMIT 1");
    statement.get();
  };
}

export function healthEndpoint(version: string, check: HealthCheck, report: ErrorReporter): () => Promise<ApiResponse> {
  return async () => {
    try {
      check();
    } catch (error) {
      report("Health check failed: the database does not answer", error);
      // The XRPC error shape ({error, message}), with the version as the reference PDS sends it.
      return jsonResponse({ error: "ServiceUnavailable", message: "The database does not answer", version }, 503, { "Cache-Control": "no-store", "Retry-After": "5" });
    }
    return jsonResponse({ version }, 200, { "Cache-Control": "no-store" });
  };
}
