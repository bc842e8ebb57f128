import pg from "pg";
import { SerialSnapshot } from "./held-snapshot.ts";
import { RowCheck } from "./row-shape.ts";
import {
  boundValues,
  checkSameFragments,
  compileText,
  fragmentsOf,
  fromDatabase,
  isInstant,
  runProgramAsync,
  runTransactionAsync,
  type Database,
  type EngineSteps,
  type Fragment,
  type HeldSnapshot,
  type Operation,
  type Program,
  type SqlValue,
  type Statement,
} from "./sql.ts";

/**
 * PostgreSQL through node-postgres (docs/decisions/0017). Each compiled
 * statement is a named prepared statement, parsed and planned once per pooled
 * connection. Transactions run at READ COMMITTED on one connection: the
 * conditional UPDATE of a single-use step waits for a concurrent one on the
 * same row and then re-checks its condition, so exactly one wins; programs
 * that read then write take `lock()`s first. A deadlock (which lock ordering
 * should prevent) is retried. Rows are coerced by the type parsers below, the
 * one place for PostgreSQL (docs/decisions/0034), and checked against the row
 * shape a program names.
 */

/** PostgreSQL's SQLSTATEs for a transaction that may succeed if simply run again. */
const RETRYABLE = new Set(["40001", "40P01"]);
const MAX_ATTEMPTS = 5;

const TIMESTAMP_OID = 1114;
const TIMESTAMPTZ_OID = 1184;
const INT8_OID = 20;
const NUMERIC_OID = 1700;
const BYTEA_OID = 17;

/**
 * Times come back as epoch milliseconds, as SQLite gives them. Prisma's
 * DateTime is `TIMESTAMP(3)` without time zone, holding UTC. Counts and
 * BigInt columns (int8) and sums (numeric) come back as numbers: ours stay far
 * below 2^53 (a passkey's counter is 32 bits; docs/decisions/0034). Bytes come back as a
 * plain Uint8Array, as SQLite's are coerced to. Booleans are PostgreSQL's own.
 */
const types = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === TIMESTAMP_OID) return (text: string) => Date.parse(`${text.replace(" ", "T")}Z`);
    if (oid === TIMESTAMPTZ_OID) return (text: string) => Date.parse(text);
    if (oid === INT8_OID || oid === NUMERIC_OID) return (text: string) => Number(text);
    if (oid === BYTEA_OID) return bytesOf;
    return pg.types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

const parseBytea = pg.types.getTypeParser(BYTEA_OID, "text") as (text: string) => Buffer;

/** bytea's text form (hex, `\\x…`) as a Uint8Array of its own (pg's Buffer may be a view of a shared pool). */
function bytesOf(text: string): Uint8Array {
  return new Uint8Array(parseBytea(text));
}

export type PostgresOptions = {
  /** Connections this process keeps open at most. */
  poolSize: number;
  /** Connections of held snapshots at most (holdSnapshot), apart from `poolSize` (docs/decisions/0042); 4 unless told. */
  snapshotPoolSize?: number;
  /** Called for errors of idle connections (a restarted server, a dropped link): logged, never thrown. */
  onIdleError?: (error: Error) => void;
};

/** A compiled statement with what was checked of it: its fragments and its rows' shape. */
type Compiled = { readonly name: string; readonly text: string; readonly fragments: readonly Fragment[]; readonly rowCheck: RowCheck };
type Queryable = Pick<pg.Pool, "query"> | pg.PoolClient;

/** How held snapshots' sessions are named in pg_stat_activity (an operator's query, and the tests', find them by it). */
export const SNAPSHOT_APPLICATION_NAME = "atrium-snapshot";

const DEFAULT_SNAPSHOT_POOL_SIZE = 4;

export class PostgresDatabase implements Database {
  readonly engine = "postgresql";
  readonly pool: pg.Pool;
  /** The held snapshots' connections (holdSnapshot): never the requests'. */
  readonly snapshotPool: pg.Pool;
  private readonly compiled = new WeakMap<TemplateStringsArray, Compiled>();
  private statementCount = 0;

  constructor(connectionString: string, options: PostgresOptions) {
    // UTC sessions: a column default of CURRENT_TIMESTAMP then means UTC too, as every time written here does.
    // Pipeline mode: a query is written as soon as it is made rather than after the answer to the one before, which
    // lets a transaction send statements ahead (Pipeline, below). One query at a time, awaited, behaves as before.
    this.pool = new pg.Pool({ connectionString, max: options.poolSize, types, options: "-c TimeZone=UTC", pipeline: true });
    this.pool.on("error", (error) => options.onIdleError?.(error));
    // pg-pool listens for a client's "error" only while the client is idle. A connection that dies while checked out
    // (PostgreSQL restarted, the backend terminated) would emit it with no listener, an uncaught exception that ends
    // the process. Its queries reject with the error, which the transaction handles; the idle case is reported above.
    this.pool.on("connect", (client) => client.on("error", ignoreConnectionError));
    this.snapshotPool = new pg.Pool({
      connectionString,
      max: options.snapshotPoolSize ?? DEFAULT_SNAPSHOT_POOL_SIZE,
      types,
      options: "-c TimeZone=UTC",
      application_name: SNAPSHOT_APPLICATION_NAME,
      pipeline: true,
    } as pg.PoolConfig);
    this.snapshotPool.on("error", (error) => options.onIdleError?.(error));
    this.snapshotPool.on("connect", (client) => client.on("error", ignoreConnectionError));
  }

  execute<T>(program: () => Program<T>): Promise<T> {
    return runProgramAsync(program(), (operation) => this.perform(this.pool, operation).catch(rethrowFromDatabase));
  }

  async transaction<T>(program: () => Program<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.pool.connect().catch(rethrowFromDatabase);
      const pipeline = new Pipeline(client);
      let broken: Error | undefined;
      try {
        // BEGIN leaves with the first statement, in one write.
        pipeline.send(() => client.query("BEGIN"));
        const result = await runTransactionAsync(program(), (operation) => this.performIn(pipeline, client, operation).catch(rethrowFromDatabase));
        // A statement sent ahead that failed has aborted the transaction, which COMMIT then silently rolls back: wait() throws its error.
        await pipeline.wait(() => client.query("COMMIT")).catch(rethrowFromDatabase);
        return result;
      } catch (error) {
        pipeline.flush();
        broken = await resetError(client, "ROLLBACK");
        if (attempt < MAX_ATTEMPTS && RETRYABLE.has(sqlState(error))) {
          await pause(attempt);
          continue;
        }
        throw error;
      } finally {
        // A connection whose rollback failed is in an unknown state: the pool drops it.
        client.release(broken);
      }
    }
  }

  async snapshot<T>(program: () => Program<T>): Promise<T> {
    const client = await this.pool.connect().catch(rethrowFromDatabase);
    const pipeline = new Pipeline(client);
    let broken: Error | undefined;
    try {
      // PostgreSQL, "Transaction Isolation": a repeatable read transaction "only sees data committed before the
      // transaction began", i.e. before its first statement. BEGIN leaves with that statement, in one write.
      pipeline.send(() => client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
      const result = await runProgramAsync(program(), (operation) => this.performIn(pipeline, client, operation).catch(rethrowFromDatabase));
      await pipeline.wait(() => client.query("COMMIT")).catch(rethrowFromDatabase);
      return result;
    } catch (error) {
      pipeline.flush();
      broken = await resetError(client, "ROLLBACK");
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /**
   * On a pool of its own (docs/decisions/0042): a snapshot waits on its holder's client, and must never take a
   * connection that requests need. PostgreSQL, "Transaction Isolation": a repeatable read transaction "only sees data
   * committed before the transaction began", i.e. before its first statement, which here is the one that bounds the
   * session's idle time inside it (idle_in_transaction_session_timeout, local to the transaction): PostgreSQL itself
   * ends a snapshot left idle that long, whatever this process does.
   */
  async holdSnapshot(options: { maxHoldMs: number }): Promise<HeldSnapshot> {
    const client = await this.snapshotPool.connect().catch(rethrowFromDatabase);
    try {
      const pipeline = new Pipeline(client);
      pipeline.send(() => client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
      await pipeline.wait(() => client.query({ name: "atrium_snapshot_bound", text: SNAPSHOT_BOUND, values: [String(Math.max(1, Math.round(options.maxHoldMs)))] }));
    } catch (error) {
      // A connection that could not begin is in an unknown state: the pool drops it.
      client.release(error instanceof Error ? error : new Error(String(error)));
      rethrowFromDatabase(error);
    }
    return new SerialSnapshot({
      run: (program) => runProgramAsync(program, (operation) => this.perform(client, operation).catch(rethrowFromDatabase)),
      // A read-only transaction has nothing to commit: ROLLBACK ends it either way, and a connection it fails on is dropped.
      end: async () => client.release(await resetError(client, "ROLLBACK")),
    });
  }

  async atomicStep<T>(steps: EngineSteps<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.runStep(steps.postgresql());
      } catch (error) {
        // A statement that failed changed nothing: one that lost a deadlock may simply run again.
        if (attempt < MAX_ATTEMPTS && RETRYABLE.has(sqlState(error))) {
          await pause(attempt);
          continue;
        }
        throw error;
      }
    }
  }

  /**
   * One statement, committed on its own. Locks come first and are session locks, taken on the connection the statement
   * then runs on: held from before its snapshot is taken until after it has committed, with no BEGIN and COMMIT round
   * trips (docs/decisions/0038).
   */
  private async runStep<T>(program: Program<T>): Promise<T> {
    let client: pg.PoolClient | undefined;
    let statements = 0;
    try {
      return await runProgramAsync(program, async (operation) => {
        if (operation.kind === "lock") {
          if (statements > 0) throw new Error("atomicStep: locks must come before the statement");
          client ??= await this.pool.connect().catch(rethrowFromDatabase);
          await client.query({ name: "atrium_session_lock", text: SESSION_LOCK, values: [operation.key] }).catch(rethrowFromDatabase);
          return undefined;
        }
        // More than one statement would not be atomic without a transaction: a mistake in the store, refused before it runs.
        if (++statements > 1) throw new Error("atomicStep: the PostgreSQL program must be one statement");
        return this.perform(client ?? this.pool, operation).catch(rethrowFromDatabase);
      });
    } finally {
      if (client) client.release(await resetError(client, "SELECT pg_advisory_unlock_all()"));
    }
  }

  async ping(): Promise<void> {
    await this.pool.query("SELECT 1").catch(rethrowFromDatabase);
  }

  async close(): Promise<void> {
    await Promise.all([this.pool.end(), this.snapshotPool.end()]);
  }

  /**
   * A statement of a transaction: a lock, or a statement sent with `send`, goes ahead without waiting for its answer
   * (nothing the program does next depends on it, and PostgreSQL runs a connection's statements in the order they
   * arrive); any other statement leaves with those sent ahead of it and is waited for with them.
   */
  private performIn(pipeline: Pipeline, client: pg.PoolClient, operation: Operation): Promise<unknown> {
    if (operation.kind === "lock" || operation.kind === "send") {
      let query: pg.QueryConfig;
      try {
        // Compiled and bound here, before it is written: a statement this process refuses (a changed fragment, a time
        // it cannot bind) must fail the transaction before anything after it, its COMMIT included, can leave. Were it
        // refused inside the sent query, PostgreSQL would never see it and would commit the rest.
        query = operation.kind === "lock" ? lockQuery(operation.key) : this.queryOf(operation.statement);
      } catch (error) {
        return Promise.reject(error);
      }
      pipeline.send(() => client.query(query));
      return Promise.resolve(undefined);
    }
    return pipeline.wait(() => this.perform(client, operation));
  }

  /** A statement on its own, or one a transaction waits for (performIn); a transaction's locks never come here. */
  private async perform(target: Queryable, operation: Operation): Promise<unknown> {
    if (operation.kind === "lock") throw new Error("lock() is only meaningful inside a transaction");
    const compiled = this.compile(operation.statement);
    const { text } = compiled;
    const result = await target.query<Record<string, unknown>>(queryFor(compiled, operation.statement));
    if (operation.kind === "run") return result.rowCount ?? 0;
    if (operation.kind === "send") return undefined;
    const rows = operation.kind === "get" ? result.rows.slice(0, 1) : result.rows;
    if (operation.shape) compiled.rowCheck.check(operation.shape, () => result.fields.map((field) => field.name), rows, text);
    return operation.kind === "get" ? rows[0] : rows;
  }

  /** The statement as pg sends it: its prepared name and text, and its values bound. Throws what this process refuses. */
  private queryOf(statement: Statement): pg.QueryConfig {
    return queryFor(this.compile(statement), statement);
  }

  private compile(statement: Statement): Compiled {
    let compiled = this.compiled.get(statement.parts);
    if (!compiled) {
      const text = compileText(statement, "postgresql", (n) => `$${n}`);
      compiled = { name: `atrium_${++this.statementCount}`, text, fragments: fragmentsOf(statement), rowCheck: new RowCheck() };
      this.compiled.set(statement.parts, compiled);
    } else checkSameFragments(compiled.fragments, statement);
    return compiled;
  }
}

/** A checked-out connection's failure reaches its queries, which reject with it; the event itself needs no answer. */
function ignoreConnectionError(): void {}

/** A compiled statement as pg sends it, with its values bound (which throws on a value this process cannot bind). */
function queryFor({ name, text }: Compiled, statement: Statement): pg.QueryConfig {
  return { name, text, values: boundValues(statement).map(bindable) };
}

/** A transaction's advisory lock, held until COMMIT or ROLLBACK. A hash collision only makes two keys wait for each other. */
function lockQuery(key: string): pg.QueryConfig {
  return { name: "atrium_lock", text: "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", values: [key] };
}

/** What of a socket Pipeline uses: Node's Writable cork, which buffers writes until the matching uncork. */
type Corkable = { cork(): void; uncork(): void };

/**
 * The statements a transaction sends ahead of the one it waits for (docs/decisions/0037, second amendment). With the
 * client in pipeline mode each query is written when it is made; the socket is corked from the first statement sent
 * ahead until the one waited for has been made, so they all leave in one write and are answered in one round trip
 * (each write is a system call into the TCP stack that wakes PostgreSQL's backend: a commit in two writes rather than
 * about ten cost the server about 0.5 ms less CPU, bench/README.md). Their answers are read in order when the next
 * statement is waited for: the first failure among them is what is thrown, and the statements after it have failed
 * too (PostgreSQL refuses a transaction's statements after a failure, and its COMMIT becomes a ROLLBACK).
 */
class Pipeline {
  private ahead: Array<Promise<unknown>> = [];
  private readonly stream: Corkable | undefined;
  private corked = false;

  constructor(client: pg.PoolClient) {
    this.stream = corkableStream(client);
  }

  /** Writes a query (buffered until the next wait or flush), its answer read at the next wait. */
  send(query: () => Promise<unknown>): void {
    this.cork();
    const sent = query();
    // Read at the next wait; until then (or if the transaction ends first, having failed) not an unhandled rejection.
    sent.catch(() => undefined);
    this.ahead.push(sent);
  }

  /** Writes a query after those sent ahead, in one write, and waits for all of them: their first failure, else its answer. */
  async wait<T>(query: () => Promise<T>): Promise<T> {
    this.cork();
    const last = query();
    last.catch(() => undefined);
    this.flush();
    const ahead = this.ahead;
    this.ahead = [];
    for (const sent of ahead) await sent;
    return last;
  }

  /** Writes whatever is buffered (before a ROLLBACK, which must not wait behind a cork). */
  flush(): void {
    if (!this.corked) return;
    this.corked = false;
    this.stream?.uncork();
  }

  private cork(): void {
    if (this.corked) return;
    this.corked = true;
    this.stream?.cork();
  }
}

/** The client's socket, when it can be corked (pg's Client.connection.stream is a net.Socket; without it, each query is its own write). */
function corkableStream(client: pg.PoolClient): Corkable | undefined {
  const stream: unknown = (client.connection as { stream?: unknown } | undefined)?.stream;
  const corkable = stream as Partial<Corkable> | undefined;
  return typeof corkable?.cork === "function" && typeof corkable.uncork === "function" ? (corkable as Corkable) : undefined;
}

/** Times are bound as ISO 8601 UTC text, which a TIMESTAMP column reads as that wall-clock time. */
function bindable(value: SqlValue): unknown {
  if (isInstant(value)) return new Date(value.epochMs).toISOString();
  if (value instanceof Uint8Array && !Buffer.isBuffer(value)) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  return value;
}

/** Errors from the pool or the server (a failed statement, a refused or lost connection) are the database's. */
function rethrowFromDatabase(error: unknown): never {
  throw fromDatabase(error);
}

/** A held snapshot's bound, in milliseconds, local to its transaction (set_config's third argument). */
const SNAPSHOT_BOUND = "SELECT set_config('idle_in_transaction_session_timeout', $1, true)";

/** Waits for a session lock on the key; a hash collision only makes two keys wait for each other. */
const SESSION_LOCK = "SELECT pg_advisory_lock(hashtextextended($1, 0))";

/**
 * Puts a connection back in a known state before it returns to the pool: ROLLBACK after a failed transaction, or the
 * end of atomicStep's session locks once its statement has committed or failed. When that query fails, its error is
 * what the connection is released with, so the pool drops it, and PostgreSQL ends a closed session's transaction and
 * locks.
 */
async function resetError(client: pg.PoolClient, reset: "ROLLBACK" | "SELECT pg_advisory_unlock_all()"): Promise<Error | undefined> {
  try {
    await client.query(reset);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

function sqlState(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : "";
}

/** A short random pause before running a transaction again, longer each time. */
function pause(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * 2 ** attempt));
}
