import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { PostgresDatabase } from "../../app/.server/db/postgres-database.ts";
import type { Database } from "../../app/.server/db/sql.ts";
import { SqliteDatabase } from "../../app/.server/db/sqlite-database.ts";
import { createTestDatabase, dropTestDatabase } from "./postgres.ts";
import type { Engine } from "./databases.ts";

/**
 * The engine the integration tests run their servers on: SQLite unless the
 * Vitest project says otherwise (vitest.config.ts runs the integration suite
 * a second time with ATRIUM_TEST_ENGINE=postgresql).
 */
export function testEngine(): Engine {
  return process.env.ATRIUM_TEST_ENGINE === "postgresql" ? "postgresql" : "sqlite";
}

/** A database for a test server: a fresh SQLite file in its own folder, or a fresh PostgreSQL database on the test cluster. */
export type ServerDatabase = {
  url: string;
  /** The SQLite file (undefined on PostgreSQL). */
  path: string | undefined;
  /** A handle on the same database for the test's own reads and writes (opened on first use, closed by `remove`). */
  open(): Database;
  /** Closes the handle and deletes the database. */
  remove(): Promise<void>;
};

export async function createServerDatabase(engine: Engine = testEngine()): Promise<ServerDatabase> {
  let handle: Database | undefined;
  if (engine === "sqlite") {
    const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-test-"));
    const file = path.join(dir, "atrium.db");
    return {
      url: `file:${file}`,
      path: file,
      open: () => (handle ??= new SqliteDatabase(file)),
      async remove() {
        await handle?.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const url = await createTestDatabase();
  return {
    url,
    path: undefined,
    open: () => (handle ??= new PostgresDatabase(url, { poolSize: 4 })),
    async remove() {
      await handle?.close();
      await dropTestDatabase(url);
    },
  };
}

/** A handle on a database another server created (DATABASE_URL), closed by the caller. */
export function openDatabaseAt(url: string): Database {
  return url.startsWith("file:") ? new SqliteDatabase(url.slice("file:".length)) : new PostgresDatabase(url, { poolSize: 4 });
}
