import { randomBytes } from "node:crypto";
import type pg from "pg";
import type { PostgresDatabase } from "../../app/.server/db/postgres-database.ts";
import { lock, type Database, type Program } from "../../app/.server/db/sql.ts";
import { inject } from "vitest";
import { APP_ROLE, databaseUrl, TEMPLATE_DATABASE, TEST_DATABASE_PREFIX, withClient } from "./postgres-cluster.ts";

export { ADMIN_ROLE, APP_ROLE, databaseUrl, TEMPLATE_DATABASE, withClient } from "./postgres-cluster.ts";

/**
 * A real PostgreSQL for the tests: one private cluster per test run, started
 * by the global setup (tests/helpers/postgres-global-setup.ts, the cluster in
 * postgres-cluster.ts) from Debian's server binaries, and a fresh database per
 * test (or per file) cloned from a template migrated once.
 *
 *   const url = await createTestDatabase();   // postgresql://atrium@127.0.0.1:<port>/atrium_test_…, migrated
 *   … DATABASE_URL: url …
 *   await dropTestDatabase(url);               // optional: the whole cluster goes at the end of the run
 */

declare module "vitest" {
  export interface ProvidedContext {
    /** The test cluster's superuser URL (tests/helpers/postgres-global-setup.ts). */
    postgresAdminUrl: string;
  }
}

/** The test cluster's superuser URL, to the `postgres` database. */
export function postgresAdminUrl(): string {
  return inject("postgresAdminUrl");
}

let created = 0;

/**
 * A new database on the test cluster, owned by the app role: by default a copy of the migrated template (every
 * PostgreSQL migration applied, no rows), with `{ migrated: false }` an empty one. Returns its
 * postgresql://atrium@127.0.0.1:<port>/<name> URL.
 */
export async function createTestDatabase(options: { migrated?: boolean } = {}): Promise<string> {
  const admin = new URL(postgresAdminUrl());
  const name = `${TEST_DATABASE_PREFIX}${process.pid}_${++created}_${randomBytes(4).toString("hex")}`;
  const template = options.migrated === false ? "template0" : TEMPLATE_DATABASE;
  await withClient(admin.href, (client) => client.query(`CREATE DATABASE "${name}" TEMPLATE "${template}" OWNER "${APP_ROLE}"`));
  return databaseUrl(Number(admin.port), APP_ROLE, name);
}

/** Drops a database createTestDatabase made, cutting its connections (servers still connected lose them). */
export async function dropTestDatabase(url: string): Promise<void> {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  if (!name.startsWith(TEST_DATABASE_PREFIX) || !/^\w+$/.test(name)) throw new Error(`${url} is not a database createTestDatabase made`);
  await withClient(postgresAdminUrl(), (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
}

/**
 * Returns once at least `count` other sessions on `client`'s database wait for a lock (a row's, a table's or an
 * advisory one): how a race test knows that the steps it started have reached the point where they must wait for the
 * transaction it holds open. Each poll is a round trip to the server, so the loop waits on the server, not on a
 * timer; `settled` ends it early when a step finished without waiting (the test's own assertions then fail).
 *
 * Each poll first clears the session's statistics snapshot. Inside a transaction (raceAgainstHeldWrite polls on the
 * connection that holds the write), PostgreSQL lists in pg_stat_activity the sessions it found at the transaction's
 * first look, until the transaction ends ("Viewing Statistics" in its manual); only their wait events are read live.
 * A step on a pool that opened its connection after that first look was never listed, and the loop polled forever.
 */
async function untilSessionsWaitForLocks(client: pg.ClientBase, count: number, settled: () => boolean = () => false): Promise<void> {
  while (!settled()) {
    await client.query("SELECT pg_stat_clear_snapshot()");
    const waiting = await client.query(`SELECT COUNT(*)::int AS "n" FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`);
    if ((waiting.rows[0] as { n: number }).n >= count) return;
  }
}

/** untilSessionsWaitForLocks for one session. */
export function untilASessionWaitsForALock(client: pg.ClientBase, settled: () => boolean = () => false): Promise<void> {
  return untilSessionsWaitForLocks(client, 1, settled);
}

/**
 * A race forced into one order: `hold` writes in a transaction on a connection of `db`'s pool that stays open; `step`
 * then starts (from another connection), and once PostgreSQL reports it waiting for a lock, the held transaction
 * commits and the step's result is returned. Throws when the step finished without waiting: then it did not race the
 * held write at all, and the test would prove nothing.
 */
export async function raceAgainstHeldWrite<T>(db: PostgresDatabase, hold: (client: pg.ClientBase) => Promise<unknown>, step: () => Promise<T>): Promise<T> {
  const client = await db.pool.connect();
  try {
    await client.query("BEGIN");
    await hold(client);
    let settled = false;
    const stepping = step().finally(() => (settled = true));
    await untilASessionWaitsForALock(client, () => settled);
    if (settled) throw new Error("The step finished without waiting for the held write: it did not race it");
    await client.query("COMMIT");
    return await stepping;
  } finally {
    await client.query("ROLLBACK");
    client.release();
  }
}

/**
 * A race between two store steps forced into one order: `first` runs on `db` with its transaction held open before
 * its COMMIT (gatedAtCommit; its writes made, its locks held), `second` starts once `first` waits at the gate, and the
 * gate opens once `second` waits for a lock too. Both results, `first`'s then `second`'s. Throws when either step
 * finished without waiting: then they did not race, and the test would prove nothing.
 */
export async function raceAgainstGatedTransaction<A, B>(db: PostgresDatabase, first: (gated: Database) => Promise<A>, second: () => Promise<B>): Promise<[A, B]> {
  const { results } = await gatedRace(db, first, second, (secondWaited) => {
    if (!secondWaited) throw new Error("A step finished without waiting: the two did not race");
    return Promise.resolve();
  });
  return results;
}

/**
 * The race of raceAgainstGatedTransaction, for a test whose question is whether `second` waits for `first`: once
 * `second` waits for a lock, or has finished without waiting, `between` runs while `first` is still held before its
 * COMMIT (a reader looking at what is committed at that moment), and then the gate opens. Both results, and whether
 * `second` waited. Throws when `first` finished without reaching its gate.
 */
export async function gatedRace<A, B>(
  db: PostgresDatabase,
  first: (gated: Database) => Promise<A>,
  second: () => Promise<B>,
  between: (secondWaited: boolean) => Promise<void>,
): Promise<{ results: [A, B]; secondWaited: boolean }> {
  const GATE = "test-gate";
  const gate = await db.pool.connect();
  try {
    await gate.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [GATE]);
    let firstSettled = false;
    const firstDone = first(gatedAtCommit(db, GATE)).finally(() => (firstSettled = true));
    await untilSessionsWaitForLocks(gate, 1, () => firstSettled);
    if (firstSettled) throw new Error("The first step finished without reaching its gate: it did not race");
    let secondSettled = false;
    const secondDone = second().finally(() => (secondSettled = true));
    await untilSessionsWaitForLocks(gate, 2, () => secondSettled || firstSettled);
    if (firstSettled) throw new Error("The first step finished without reaching its gate: it did not race");
    const secondWaited = !secondSettled;
    await between(secondWaited);
    await gate.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [GATE]);
    return { results: await Promise.all([firstDone, secondDone]), secondWaited };
  } finally {
    await gate.query("SELECT pg_advisory_unlock_all()");
    gate.release();
  }
}

/**
 * The database, except that each transaction, once its program has run, takes the advisory lock `gate` before it
 * commits: a race test holds the gate (a session lock on a client of its own) to keep a store's real transaction open,
 * its writes made and its row locks held, while it starts the step that races it.
 */
function gatedAtCommit(db: Database, gate: string): Database {
  const transaction = <T>(program: () => Program<T>) =>
    db.transaction(function* (): Program<T> {
      const result = yield* program();
      yield* lock(gate);
      return result;
    });
  // Every other member is the database's own, called on it: a handle made with Object.create(db) would run them on
  // itself, and the first statement it compiled would count its name from the database's count into a count of its
  // own, giving a name the database had given another statement (pg refuses it).
  return new Proxy(db, {
    get(target, property) {
      if (property === "transaction") return transaction;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
