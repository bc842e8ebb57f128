import BetterSqlite3 from "better-sqlite3";
import { boundValues, compileText, isInstant, runProgramSync, type Database, type EngineSteps, type Operation, type Program, type SqlValue, type Statement } from "./sql.ts";

/**
 * SQLite through better-sqlite3, synchronous (docs/decisions/0002, 0017):
 * a program runs to its end without yielding to the event loop, so nothing
 * else of this process interleaves with it, and a transaction holds SQLite's
 * write lock from its first statement (BEGIN IMMEDIATE), which serialises it
 * against every other process on the file. WAL lets readers go on meanwhile.
 * Times are stored as epoch milliseconds, as Prisma's adapter writes them
 * (`timestampFormat: "unixepoch-ms"`).
 */
export class SqliteDatabase implements Database {
  readonly engine = "sqlite";
  readonly connection: BetterSqlite3.Database;
  private readonly prepared = new WeakMap<TemplateStringsArray, BetterSqlite3.Statement>();
  private readonly perform = (operation: Operation): unknown => this.performNow(operation);
  private healthStatement: BetterSqlite3.Statement | undefined;

  constructor(path: string) {
    this.connection = openSqliteConnection(path);
  }

  execute<T>(program: () => Program<T>): T {
    return runProgramSync(program(), this.perform);
  }

  transaction<T>(program: () => Program<T>): T {
    return this.connection.transaction(() => runProgramSync(program(), this.perform)).immediate();
  }

  atomicStep<T>(steps: EngineSteps<T>): T {
    return this.transaction(steps.sqlite);
  }

  /**
   * Reads the schema table rather than `SELECT 1`: that touches no table, and
   * answers even when the database file is gone or unreadable. This starts a
   * read transaction, which takes SQLite's read lock and reads the file's
   * header whenever another connection changed the file.
   */
  ping(): void {
    this.healthStatement ??= this.connection.prepare("SELECT 1 FROM sqlite_schema LIMIT 1");
    this.healthStatement.get();
  }

  async close(): Promise<void> {
    this.connection.close();
  }

  private performNow(operation: Operation): unknown {
    if (operation.kind === "lock") {
      // BEGIN IMMEDIATE holds the write lock already; outside a transaction a lock would mean nothing (as on PostgreSQL).
      if (!this.connection.inTransaction) throw new Error("lock() is only meaningful inside a transaction");
      return undefined;
    }
    const statement = this.statementFor(operation.statement);
    const values = boundValues(operation.statement).map(bindable);
    if (operation.kind === "get") return statement.get(values);
    if (operation.kind === "all") return statement.all(values);
    return statement.run(values).changes;
  }

  private statementFor(source: Statement): BetterSqlite3.Statement {
    let statement = this.prepared.get(source.parts);
    if (!statement) {
      statement = this.connection.prepare(compileText(source, "sqlite", () => "?"));
      this.prepared.set(source.parts, statement);
    }
    return statement;
  }
}

/** Opens a connection with the settings every connection to the file needs. */
export function openSqliteConnection(path: string): BetterSqlite3.Database {
  const connection = new BetterSqlite3(path);
  connection.pragma("journal_mode = WAL");
  connection.pragma("synchronous = NORMAL");
  connection.pragma("busy_timeout = 5000");
  connection.pragma("foreign_keys = ON");
  return connection;
}

/** better-sqlite3 binds neither booleans nor our times: SQLite keeps 1/0 and epoch milliseconds. */
function bindable(value: SqlValue): unknown {
  if (isInstant(value)) return value.epochMs;
  if (typeof value === "boolean") return value ? 1 : 0;
  if (value instanceof Uint8Array && !Buffer.isBuffer(value)) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  return value;
}
