import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { defaultMigrationsDir, migrateDatabase } from "../../app/.server/db/migrate.ts";
import { PostgresDatabase } from "../../app/.server/db/postgres-database.ts";
import { allUnchecked, getUnchecked, run, type Database, type Statement } from "../../app/.server/db/sql.ts";
import { SqliteDatabase } from "../../app/.server/db/sqlite-database.ts";
import { createTestDatabase, dropTestDatabase } from "./postgres.ts";

/**
 * A fresh, migrated database on either engine, for the store contract
 * suites: the same tests run on a SQLite file and on the test cluster's
 * PostgreSQL (tests/helpers/postgres.ts), so each store's programs are proven
 * on both (docs/decisions/0017).
 *
 *   describe.each(ENGINES)("SqlGrantStore on %s", (engine) => {
 *     let test: TestDatabase;
 *     beforeEach(async () => (test = await openTestDatabase(engine)));
 *     afterEach(() => test.close());
 *     …
 */

export const ENGINES = ["sqlite", "postgresql"] as const;
export type Engine = (typeof ENGINES)[number];

/**
 * How a contract suite's race runs on `engine`, for the test's name. On PostgreSQL the calls run at once, each store on
 * its own pool, as separate processes would. On SQLite each call runs synchronously to its end, so calls made "at
 * once" on separate connections of one process run one after another; the races between processes on one SQLite
 * file are in tests/integration (three-processes.test.ts, workers.test.ts, concurrency-faults.test.ts).
 */
export function raceOn(engine: Engine, connections: number): string {
  return engine === "postgresql" ? `at once on ${connections} connections` : `on ${connections} connections, one after another (SQLite runs each call to its end)`;
}

export type TestDatabase = {
  engine: Engine;
  /** The database the store under test uses. */
  db: Database;
  /** DATABASE_URL of the same database. */
  url: string;
  /** Another connection (SQLite) or pool (PostgreSQL) to the same database: a second server process's view. */
  connect(): Database;
  close(): Promise<void>;
};

export async function openTestDatabase(engine: Engine): Promise<TestDatabase> {
  const opened: Database[] = [];
  const connect = (open: () => Database) => () => {
    const db = open();
    opened.push(db);
    return db;
  };
  const closeAll = async () => {
    for (const db of opened.splice(0)) await db.close();
  };
  if (engine === "sqlite") {
    const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-store-"));
    const file = path.join(dir, "atrium.db");
    migrateDatabase(file);
    const open = connect(() => new SqliteDatabase(file));
    return {
      engine,
      db: open(),
      url: `file:${file}`,
      connect: open,
      async close() {
        await closeAll();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const url = await createTestDatabase();
  const open = connect(() => new PostgresDatabase(url, { poolSize: 5 }));
  return {
    engine,
    db: open(),
    url,
    connect: open,
    async close() {
      await closeAll();
      await dropTestDatabase(url);
    },
  };
}

/**
 * The first row of a statement (tests read the tables directly to check what the stores wrote), as the engine gives
 * it: unchecked and uncoerced (SQLite's 1/0, its Buffers), typed as the test says.
 */
export async function rowOf<Row>(db: Database, statement: Statement): Promise<Row | undefined> {
  return (await db.execute(() => getUnchecked(statement))) as Row | undefined;
}

export async function rowsOf<Row>(db: Database, statement: Statement): Promise<Row[]> {
  return (await db.execute(() => allUnchecked(statement))) as Row[];
}

/** Runs a statement; the number of rows it changed. */
export async function execute(db: Database, statement: Statement): Promise<number> {
  return db.execute(() => run(statement));
}

/**
 * Migrates the SQLite file with the migrations before `migration` only: a database as an earlier release left it, for
 * a test that fills it and then migrates it to the latest schema (a folder of those migrations is made beside the file).
 */
export function migrateSqliteBefore(file: string, migration: string): void {
  const earlier = path.join(path.dirname(file), "earlier-migrations");
  for (const name of readdirSync(defaultMigrationsDir()).filter((entry) => entry < migration)) {
    cpSync(path.join(defaultMigrationsDir(), name), path.join(earlier, name), { recursive: true });
  }
  migrateDatabase(file, earlier);
}
