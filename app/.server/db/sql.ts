import type { RowShape } from "./row-shape.ts";

/**
 * The SQL that every store writes once and both engines run (docs/decisions/0017).
 *
 * A statement is a tagged template, sql`SELECT … WHERE "idHash" = ${idHash}`:
 * its text is fixed at the call site, so each engine compiles it once
 * (placeholders, prepared statement) and caches it by the template's identity.
 * Values are always parameters, never text. The SQL is the subset SQLite
 * (≥ 3.39) and PostgreSQL (≥ 13) share: quoted camelCase identifiers,
 * `ON CONFLICT … DO NOTHING/UPDATE`, `RETURNING`, `CASE` rather than
 * two-argument MIN/MAX, `IS NOT DISTINCT FROM`, no rowid.
 *
 * Times are epoch milliseconds in the code. SQLite stores them so; PostgreSQL
 * stores Prisma's `TIMESTAMP(3)` (UTC). A time parameter is therefore marked
 * with `at(ms)`, which each engine binds in its own form; times read back are
 * epoch milliseconds on both.
 *
 * A store method is a program: a generator that yields statements and gets
 * their results back (`const row = yield* get(tables.Grant, sql`…`)`), typed
 * by the row shape it names, which the engine checks the statement's columns
 * against and coerces by (docs/decisions/0034). The engine runs
 * it — SQLite synchronously, inside `BEGIN IMMEDIATE` when it is a
 * transaction, so nothing else of this process can interleave; PostgreSQL
 * asynchronously on one pooled connection, inside a READ COMMITTED
 * transaction in which the conditional UPDATE of a single-use step decides
 * the race and `lock()` orders read-then-write steps. One program, two
 * engines: the store code has no engine in it.
 */

/** A value, or a promise of it: SQLite answers at once, PostgreSQL later. Callers await either. */
export type Awaitable<T> = T | Promise<T>;

/** A time, in epoch milliseconds, to be bound as the engine stores times. */
export class Instant {
  constructor(readonly epochMs: number) {}
}

export function isInstant(value: unknown): value is Instant {
  return value instanceof Instant;
}

/** Marks a parameter as a time (epoch ms); null and undefined stay null. */
export function at(epochMs: number): Instant;
export function at(epochMs: number | null | undefined): Instant | null;
export function at(epochMs: number | null | undefined): Instant | null {
  return epochMs === null || epochMs === undefined ? null : new Instant(epochMs);
}

/**
 * A piece of SQL text that differs between the engines, written into the
 * statement rather than bound. It must be a module-level constant: the text
 * of a call site is compiled once, with the fragments of its first run. Lint
 * refuses one made anywhere else (eslint-rules/fragment-module-constant.js),
 * and an engine refuses a statement whose fragments differ from those it
 * compiled (`checkSameFragments`), which would otherwise run the wrong text.
 */
export class Fragment {
  constructor(readonly text: { sqlite: string; postgresql: string }) {}
}

export function isFragment(value: unknown): value is Fragment {
  return value instanceof Fragment;
}

/** PostgreSQL compares text by the database's locale unless told otherwise; record keys are ordered bytewise, as in SQLite. */
export const BYTEWISE = new Fragment({ sqlite: "", postgresql: 'COLLATE "C"' });

export type SqlValue = string | number | boolean | null | Uint8Array | Instant | Fragment;

/** The text of a statement for one engine, with `placeholder(n)` (n from 1) for each bound value. */
export function compileText(statement: Statement, engine: "sqlite" | "postgresql", placeholder: (n: number) => string): string {
  let bound = 0;
  let text = statement.parts[0]!;
  statement.values.forEach((value, index) => {
    text += isFragment(value) ? value.text[engine] : placeholder(++bound);
    text += statement.parts[index + 1]!;
  });
  return text;
}

/** The values a statement binds (its fragments are part of its text). */
export function boundValues(statement: Statement): SqlValue[] {
  return statement.values.some(isFragment) ? statement.values.filter((value) => !isFragment(value)) : [...statement.values];
}

/** The fragments of a statement, in order (most statements have none). */
export function fragmentsOf(statement: Statement): Fragment[] {
  return statement.values.filter(isFragment);
}

/**
 * Throws when a statement's fragments are not the ones its cached text was compiled with: a template whose
 * fragment changes between runs (`${cond ? A : B}`) would otherwise run its first text every time.
 */
export function checkSameFragments(compiledWith: readonly Fragment[], statement: Statement): void {
  if (compiledWith.length === 0 && !statement.values.some(isFragment)) return;
  const now = fragmentsOf(statement);
  if (now.length === compiledWith.length && now.every((fragment, index) => fragment === compiledWith[index])) return;
  throw new Error(`A statement's fragments changed since its text was compiled; a Fragment must be a module constant, the same at every run: ${statement.parts.join("?")}`);
}

/** A statement: the template's fixed parts (its identity keys the engines' caches) and the values between them. */
export type Statement = { readonly parts: TemplateStringsArray; readonly values: readonly SqlValue[] };

export function sql(parts: TemplateStringsArray, ...values: SqlValue[]): Statement {
  return { parts, values };
}

/**
 * A statement whose text is built once, at module load, from pieces known
 * then (a table name, a batch size): `?` marks each parameter. The returned
 * function makes statements that share one identity, as a template's do.
 */
export function statementOf(text: string): (...values: SqlValue[]) => Statement {
  const pieces = text.split("?");
  const parts = Object.assign([...pieces], { raw: [...pieces] }) as unknown as TemplateStringsArray;
  Object.freeze(parts);
  return (...values) => {
    if (values.length !== pieces.length - 1) throw new Error(`Statement expects ${pieces.length - 1} values, got ${values.length}`);
    return { parts, values };
  };
}

/** What a program asks its engine to do with one statement. */
export type Operation =
  | { readonly kind: "get"; readonly statement: Statement; readonly shape: RowShape<unknown> | undefined }
  | { readonly kind: "all"; readonly statement: Statement; readonly shape: RowShape<unknown> | undefined }
  | { readonly kind: "run"; readonly statement: Statement }
  | { readonly kind: "send"; readonly statement: Statement }
  /** `rank`: where the lock stands in the order transactions take their locks (stores/locks.ts); checked per program. */
  | { readonly kind: "lock"; readonly key: string; readonly rank?: number };

/** A store method's body: yields operations, receives their results, returns T. */
export type Program<T> = Generator<Operation, T, unknown>;

/**
 * The first row, or undefined, of the shape named: a table's (`tables.Passkey`), some of its columns
 * (`tables.Account.pick("did", "handle")`) or one written in place (`shape({ n: "integer" })`). The engine checks
 * that the statement returns exactly those columns with values of those kinds, and coerces them, so the row type
 * is what arrives (docs/decisions/0034).
 */
export function* get<Row>(shape: RowShape<Row>, statement: Statement): Generator<Operation, Row | undefined, unknown> {
  return (yield { kind: "get", statement, shape }) as Row | undefined;
}

/** Every row, of the shape named (see `get`). */
export function* all<Row>(shape: RowShape<Row>, statement: Statement): Generator<Operation, Row[], unknown> {
  return (yield { kind: "all", statement, shape }) as Row[];
}

/**
 * The first row as the engine gives it, unchecked and uncoerced (SQLite's 1/0, Buffers): for tests that read the
 * tables directly. Lint keeps it out of the server's code, whose reads name their row shape.
 */
export function* getUnchecked(statement: Statement): Generator<Operation, Record<string, unknown> | undefined, unknown> {
  return (yield { kind: "get", statement, shape: undefined }) as Record<string, unknown> | undefined;
}

/** Every row as the engine gives it (see `getUnchecked`). */
export function* allUnchecked(statement: Statement): Generator<Operation, Record<string, unknown>[], unknown> {
  return (yield { kind: "all", statement, shape: undefined }) as Record<string, unknown>[];
}

/** Runs a statement that returns no rows; the number of rows it changed. */
export function* run(statement: Statement): Generator<Operation, number, unknown> {
  return (yield { kind: "run", statement }) as number;
}

/**
 * Runs a statement that returns no rows and whose result the program does not read. In a PostgreSQL transaction it
 * is sent without waiting for its answer, with the statements after it, up to one the program waits for (or the
 * COMMIT): they leave in one write and are answered in one round trip (docs/decisions/0037, second amendment). A
 * failure is thrown where the program next waits, and the transaction is rolled back as after any failed statement.
 * Elsewhere, and on SQLite, it is `run`.
 */
export function* send(statement: Statement): Generator<Operation, void, unknown> {
  yield { kind: "send", statement };
}

/**
 * Inside a transaction, waits until no other transaction holds `key`, and
 * holds it until this one ends. A program that reads and then writes on what
 * it read (a quota, a counter, a compare-and-swap) takes the lock of what it
 * reads first, so that two such programs cannot both read the old state.
 * PostgreSQL: a transaction-scoped advisory lock (READ COMMITTED does not
 * stop the interleaving on its own); in `atomicStep`, a session lock held
 * until its one statement has committed (docs/decisions/0038). SQLite: nothing
 * to do, since BEGIN IMMEDIATE already excludes every other writer.
 */
export function* lock(key: string, rank?: number): Generator<Operation, void, unknown> {
  yield rank === undefined ? { kind: "lock", key } : { kind: "lock", key, rank };
}

/** Tables whose rows stand in the lock order when written (rankRowWrites): the table, its rank. */
const rankedTables = new Map<string, number>();
/** Per statement text: the ranked table it writes, or null. */
const writtenTables = new WeakMap<TemplateStringsArray, string | null>();
const WRITE_TARGET = /^\s*(?:UPDATE|DELETE\s+FROM|INSERT\s+INTO)\s+"(\w+)"/i;

/**
 * Writing a row of `table` counts, in the lock order, as holding a lock of `rank`: on PostgreSQL the write holds the
 * row until the transaction ends, so a ranked lock below it taken afterwards is the same mistake as one taken after a
 * higher lock (stores/locks.ts).
 */
export function rankRowWrites(table: string, rank: number): void {
  rankedTables.set(table, rank);
}

function rankedTableWritten(statement: Statement): string | null {
  let table = writtenTables.get(statement.parts);
  if (table === undefined) {
    const target = WRITE_TARGET.exec(statement.parts[0] ?? "")?.[1];
    table = target !== undefined && rankedTables.has(target) ? target : null;
    writtenTables.set(statement.parts, table);
  }
  return table;
}

/**
 * The order of a program's ranked locks: a lock ranked below one the program already holds is a mistake that could
 * deadlock two transactions (each holding what the other waits for), refused before it is taken, on both engines.
 * A write to a ranked table's row holds that row as a lock of its rank (rankRowWrites).
 */
function lockOrderCheck(): (operation: Operation) => void {
  let highest: { rank: number; key: string } | undefined;
  const held = new Set<string>();
  const hold = (rank: number, key: string) => {
    if (!highest || rank > highest.rank) highest = { rank, key };
  };
  return (operation) => {
    if (operation.kind !== "lock") {
      if (rankedTables.size === 0) return;
      const table = rankedTableWritten(operation.statement);
      if (table !== null) hold(rankedTables.get(table)!, `a write to a row of "${table}"`);
      return;
    }
    // A lock the program holds already (lockdown's credentials lock, in a reset that took it first) waits for nothing.
    if (operation.rank === undefined || held.has(operation.key)) return;
    held.add(operation.key);
    if (highest && operation.rank < highest.rank) {
      throw new Error(`Lock order: ${operation.key} is taken after ${highest.key}, which comes after it (stores/locks.ts)`);
    }
    hold(operation.rank, operation.key);
  };
}

/** The two writings of one atomic step (Database.atomicStep). */
export type EngineSteps<T> = { readonly sqlite: () => Program<T>; readonly postgresql: () => Program<T> };

/** One database, whichever the engine. */
export interface Database {
  readonly engine: "sqlite" | "postgresql";
  /** Runs a program statement by statement, each on its own (for reads, and writes that are one statement). */
  execute<T>(program: () => Program<T>): Awaitable<T>;
  /**
   * Runs a program as one transaction: all of its writes or none, and no
   * other transaction's writes seen half-done. On PostgreSQL the program may
   * run more than once (a deadlock is retried), so it must do nothing but
   * yield statements. Once a statement failed, the transaction is aborted on
   * both engines, as PostgreSQL aborts it: every later statement throws
   * `TransactionAborted`, and so does the end of a program that caught the
   * error, after the rollback (docs/decisions/0034).
   */
  transaction<T>(program: () => Program<T>): Awaitable<T>;
  /**
   * Runs a program that only reads on one snapshot of the database: every statement sees the same committed state,
   * whatever other processes commit meanwhile. SQLite: a deferred (read) transaction, whose snapshot WAL takes at
   * its first read; PostgreSQL: REPEATABLE READ READ ONLY on one pooled connection, released at its end.
   */
  snapshot<T>(program: () => Program<T>): Awaitable<T>;
  /**
   * A snapshot held open across awaits, for a reader that waits on something else between its reads (a client taking
   * a repository export at its own pace: docs/decisions/0042). Every read sees the state of the moment it was opened,
   * whatever other processes commit meanwhile, and nothing the server's other work needs waits for it: SQLite reads
   * it on a connection of its own (a deferred transaction on a query-only connection with a small page cache; WAL
   * readers hold no lock a writer waits for), PostgreSQL on a pool of its own (REPEATABLE READ READ ONLY), so that
   * snapshots never take the connections requests need. The holder must `release()` it (idempotent); a failed read
   * releases it too. `maxHoldMs` bounds it where the holder cannot: PostgreSQL ends the session itself once the
   * transaction has been idle that long (idle_in_transaction_session_timeout), so that a snapshot this process failed
   * to release, or a process that stopped, cannot hold back vacuum; an SQLite snapshot ends with its process.
   */
  holdSnapshot(options: { maxHoldMs: number }): Promise<HeldSnapshot>;
  /**
   * One atomic step written for each engine, where PostgreSQL can do in one statement what SQLite needs a transaction
   * for: data-modifying WITH clauses (`WITH "spent" AS (UPDATE … RETURNING …) INSERT … SELECT … FROM "spent"`), which
   * SQLite lacks. PostgreSQL runs `steps.postgresql`, which must yield exactly one statement (a statement is atomic on
   * its own: no BEGIN and COMMIT round trips), retried like a transaction on a deadlock; when it first takes
   * `lock()`s, they are session locks on the connection the statement then runs on, released after it has committed
   * (the locks, the statement, one unlock: docs/decisions/0038), so that the statement's snapshot is taken with the
   * locks held and the next holder's snapshot sees its writes. SQLite runs `steps.sqlite` as a transaction. Both programs must have the same effect; the store contract suites run each on its engine
   * (docs/decisions/0035).
   */
  atomicStep<T>(steps: EngineSteps<T>): Awaitable<T>;
  /** Throws when the database does not answer (the health check). */
  ping(): Awaitable<void>;
  close(): Promise<void>;
}

/** A snapshot held open across awaits (Database.holdSnapshot). */
export interface HeldSnapshot {
  /** Runs a program that only reads, on the snapshot; reads run one at a time, in the order asked. A failed read releases the snapshot. */
  read<T>(program: () => Program<T>): Promise<T>;
  /** Ends the read and gives its connection back, after the reads asked before; again, it does nothing. Later reads throw SnapshotReleased. */
  release(): Promise<void>;
}

/** What a read of a released snapshot throws. */
export class SnapshotReleased extends Error {
  constructor() {
    super("The snapshot was released");
  }
}

/** Set on errors of any class (the drivers', ours), which is why a mark rather than a class. */
const FROM_DATABASE = Symbol("atrium.sql.from-database");

/** Marks an error as the database's (a failed statement, a lost connection): the metrics count it as such. */
export function fromDatabase<E>(error: E): E {
  if (typeof error === "object" && error !== null && !(FROM_DATABASE in error)) Object.defineProperty(error, FROM_DATABASE, { value: true });
  return error;
}

export function isFromDatabase(error: unknown): boolean {
  return typeof error === "object" && error !== null && FROM_DATABASE in error;
}

/** A unique or primary-key constraint refused the write (both engines' codes). */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "23505" || code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY";
}

/**
 * What a transaction's later statements and its end throw once one of its statements failed: PostgreSQL refuses
 * everything until the rollback (SQLSTATE 25P02), and SQLite is made to do the same, so that a program that caught
 * a database error cannot commit on one engine what the other would roll back.
 */
export class TransactionAborted extends Error {
  readonly code = "25P02";
  constructor(readonly failure: unknown) {
    super(`The transaction was aborted by a failed statement and rolled back; a program must not catch a database error inside a transaction (${failure instanceof Error ? failure.message : String(failure)})`, { cause: failure });
  }
}

/** Runs a transaction's program (SQLite): after a failed statement, every later one and its end throw TransactionAborted. */
export function runTransactionSync<T>(program: Program<T>, perform: (operation: Operation) => unknown): T {
  let failure: { error: unknown } | undefined;
  const result = runProgramSync(program, (operation) => {
    if (failure) throw new TransactionAborted(failure.error);
    try {
      return perform(operation);
    } catch (error) {
      failure = { error };
      throw error;
    }
  });
  if (failure) throw new TransactionAborted(failure.error);
  return result;
}

/** The same for PostgreSQL, which aborts the transaction itself: this refuses later statements before sending them, and a commit that would be a silent rollback. */
export async function runTransactionAsync<T>(program: Program<T>, perform: (operation: Operation) => Promise<unknown>): Promise<T> {
  let failure: { error: unknown } | undefined;
  const result = await runProgramAsync(program, async (operation) => {
    if (failure) throw new TransactionAborted(failure.error);
    try {
      return await perform(operation);
    } catch (error) {
      failure = { error };
      throw error;
    }
  });
  if (failure) throw new TransactionAborted(failure.error);
  return result;
}

/** Drives a program to its end, handing each operation to `perform` (synchronous: SQLite). */
export function runProgramSync<T>(program: Program<T>, perform: (operation: Operation) => unknown): T {
  const checkLockOrder = lockOrderCheck();
  let step = program.next();
  while (!step.done) {
    let result: unknown;
    try {
      checkLockOrder(step.value);
      result = perform(step.value);
    } catch (error) {
      // Outside a transaction the program may catch it; otherwise it propagates out of throw().
      step = program.throw(error);
      continue;
    }
    step = program.next(result);
  }
  return step.value;
}

/** Drives a program to its end, awaiting each operation (PostgreSQL). */
export async function runProgramAsync<T>(program: Program<T>, perform: (operation: Operation) => Promise<unknown>): Promise<T> {
  const checkLockOrder = lockOrderCheck();
  let step = program.next();
  while (!step.done) {
    let result: unknown;
    try {
      checkLockOrder(step.value);
      result = await perform(step.value);
    } catch (error) {
      step = program.throw(error);
      continue;
    }
    step = program.next(result);
  }
  return step.value;
}
