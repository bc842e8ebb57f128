import BetterSqlite3 from "better-sqlite3";
import { SerialSnapshot } from "./held-snapshot.ts";
import { columnsOfKind, RowCheck, type RowShape } from "./row-shape.ts";
import {
  boundValues,
  checkSameFragments,
  compileText,
  fragmentsOf,
  isInstant,
  runProgramSync,
  runTransactionSync,
  type Database,
  type EngineSteps,
  type Fragment,
  type HeldSnapshot,
  type Operation,
  type Program,
  type SqlValue,
  type Statement,
} from "./sql.ts";

/** A prepared statement with what was checked of it: its fragments, its rows' shape, and how that shape is coerced. */
type Prepared = {
  readonly statement: BetterSqlite3.Statement;
  readonly fragments: readonly Fragment[];
  readonly rowCheck: RowCheck;
  coercion: Coercion;
};

/** The columns of a shape that SQLite delivers in another form than the row type's. */
type Coercion = { readonly booleans: readonly string[]; readonly bytes: readonly string[] };

const NO_COERCION: Coercion = { booleans: [], bytes: [] };

/**
 * SQLite through better-sqlite3, synchronous (docs/decisions/0002, 0017):
 * a program runs to its end without yielding to the event loop, so nothing
 * else of this process interleaves with it, and a transaction holds SQLite's
 * write lock from its first statement (BEGIN IMMEDIATE), which serialises it
 * against every other process on the file. WAL lets readers go on meanwhile.
 * Times are stored as epoch milliseconds, as Prisma's adapter writes them
 * (`timestampFormat: "unixepoch-ms"`). Rows are coerced here, the one place
 * for SQLite (docs/decisions/0034): a Boolean column's 1/0 becomes a boolean
 * and a Bytes column's Buffer a plain Uint8Array, by the row shape a program
 * names. A failed statement aborts its transaction, as on PostgreSQL.
 */
export class SqliteDatabase implements Database {
  readonly engine = "sqlite";
  readonly connection: BetterSqlite3.Database;
  private readonly statements: SqliteStatements;
  private readonly perform: (operation: Operation) => unknown;
  private healthStatement: BetterSqlite3.Statement | undefined;

  constructor(private readonly path: string) {
    this.connection = openSqliteConnection(path);
    this.statements = new SqliteStatements(this.connection);
    this.perform = this.statements.perform;
  }

  execute<T>(program: () => Program<T>): T {
    return runProgramSync(program(), this.perform);
  }

  transaction<T>(program: () => Program<T>): T {
    return this.connection.transaction(() => runTransactionSync(program(), this.perform)).immediate();
  }

  snapshot<T>(program: () => Program<T>): T {
    // Nothing of this process interleaves with a synchronous program; DEFERRED takes no write lock, so writers in
    // other processes go on (WAL) while this one reads the state of its first statement.
    return this.connection.transaction(() => runProgramSync(program(), this.perform)).deferred();
  }

  /**
   * A connection of its own (docs/decisions/0042): this one is every request's, and a transaction on it would hold
   * every other statement of the process. Query-only, so that nothing but reads can run on it, with a small page
   * cache (a snapshot reads each page of its blocks once), and its WAL snapshot taken at once by a first read. In WAL
   * mode a reader takes no lock a writer waits for; what it holds back is the checkpoint, which cannot pass the
   * oldest snapshot still read (the WAL grows meanwhile): its holder bounds it in time.
   */
  async holdSnapshot(): Promise<HeldSnapshot> {
    if (this.path === ":memory:") throw new Error("A snapshot of an in-memory database needs the one connection that holds it");
    const connection = openSqliteConnection(this.path);
    try {
      connection.pragma("query_only = ON");
      connection.pragma(`cache_size = -${SNAPSHOT_CACHE_KIB}`);
      connection.prepare("BEGIN DEFERRED").run();
      connection.prepare("SELECT 1 FROM sqlite_schema LIMIT 1").get();
    } catch (error) {
      connection.close();
      throw error;
    }
    const statements = new SqliteStatements(connection);
    return new SerialSnapshot({
      run: async (program) => runProgramSync(program, statements.perform),
      // Closing the connection ends its read transaction.
      end: async () => {
        connection.close();
      },
    });
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
}

/** A held snapshot's page cache, KiB (SQLite's default is 2,000). */
const SNAPSHOT_CACHE_KIB = 256;

/** One connection's prepared statements, and how an operation runs on it. */
class SqliteStatements {
  private readonly prepared = new WeakMap<TemplateStringsArray, Prepared>();

  constructor(private readonly connection: BetterSqlite3.Database) {}

  readonly perform = (operation: Operation): unknown => {
    if (operation.kind === "lock") {
      // BEGIN IMMEDIATE holds the write lock already; outside a transaction a lock would mean nothing (as on PostgreSQL).
      if (!this.connection.inTransaction) throw new Error("lock() is only meaningful inside a transaction");
      return undefined;
    }
    const prepared = this.preparedFor(operation.statement);
    const values = boundValues(operation.statement).map(bindable);
    if (operation.kind === "run") return prepared.statement.run(values).changes;
    if (operation.kind === "send") {
      prepared.statement.run(values);
      return undefined;
    }
    if (operation.kind === "get") {
      const row = prepared.statement.get(values) as Record<string, unknown> | undefined;
      if (operation.shape) deliver(prepared, operation.shape, row ? [row] : []);
      return row;
    }
    const rows = prepared.statement.all(values) as Record<string, unknown>[];
    if (operation.shape) deliver(prepared, operation.shape, rows);
    return rows;
  };

  private preparedFor(source: Statement): Prepared {
    let prepared = this.prepared.get(source.parts);
    if (!prepared) {
      const statement = this.connection.prepare(compileText(source, "sqlite", () => "?"));
      prepared = { statement, fragments: fragmentsOf(source), rowCheck: new RowCheck(), coercion: NO_COERCION };
      this.prepared.set(source.parts, prepared);
    } else checkSameFragments(prepared.fragments, source);
    return prepared;
  }
}

/** Coerces rows to the shape's kinds, in place, and checks them against it (once per statement and shape). */
function deliver(prepared: Prepared, shape: RowShape<unknown>, rows: Record<string, unknown>[]): void {
  if (prepared.rowCheck.isNew(shape)) prepared.coercion = { booleans: columnsOfKind(shape, "boolean"), bytes: columnsOfKind(shape, "bytes") };
  const { booleans, bytes } = prepared.coercion;
  if (booleans.length > 0 || bytes.length > 0) {
    for (const row of rows) {
      for (const name of booleans) row[name] = booleanOf(row[name]);
      for (const name of bytes) row[name] = bytesOf(row[name]);
    }
  }
  prepared.rowCheck.check(shape, () => prepared.statement.columns().map((column) => column.name), rows, prepared.statement.source);
}

/** SQLite keeps booleans as 1/0; anything else is left for the row check to refuse. */
function booleanOf(value: unknown): unknown {
  return value === 1 ? true : value === 0 ? false : value;
}

/** A copy in a plain Uint8Array: a Buffer is a subclass some libraries treat differently. */
function bytesOf(value: unknown): unknown {
  return Buffer.isBuffer(value) ? new Uint8Array(value) : value;
}

/**
 * Opens a connection with the settings every connection to the file needs. The busy timeout comes first, so that the
 * journal mode's pragma waits for a lock another connection holds for a moment (a checkpoint, WAL recovery) rather
 * than fail: held snapshots open connections while the server and other processes write (docs/decisions/0042).
 */
export function openSqliteConnection(path: string): BetterSqlite3.Database {
  const connection = new BetterSqlite3(path);
  connection.pragma("busy_timeout = 5000");
  connection.pragma("journal_mode = WAL");
  connection.pragma("synchronous = NORMAL");
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
