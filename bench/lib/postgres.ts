import pg from "pg";
import { databaseUrl, findPostgresBinaries, hasLibrary, startPostgresCluster, type PostgresCluster } from "../../scripts/lib/postgres-cluster.ts";
import { processTreeCpuTicks } from "./cpu.ts";

/**
 * The benchmark's PostgreSQL: a private cluster for the run (the same code as
 * the tests' cluster, scripts/lib/postgres-cluster.ts), but with the settings
 * of a production server: fsync and synchronous commit on, full page writes,
 * shared_buffers sized for a database server rather than a throwaway. With
 * pg_stat_statements loaded when the installed PostgreSQL has it (Debian's
 * postgresql-contrib, which the postgresql package pulls in), so that the
 * statements each request costs can be counted.
 *
 * Its CPU is that of the postmaster and all its children (backends, WAL
 * writer, checkpointer…), living or gone, from /proc: what PostgreSQL itself
 * spends, apart from the server process's CPU.
 */

/** The ordinary role the server connects as (a deployment's would be one too). */
export const APP_ROLE = "atrium";

export const BENCH_SETTINGS: Record<string, string> = {
  listen_addresses: "127.0.0.1",
  max_connections: "100",
  // Durable commits, as in production: every COMMIT waits for its WAL to reach the disk.
  fsync: "on",
  synchronous_commit: "on",
  full_page_writes: "on",
  // A dedicated database server would give a quarter of its memory; the benchmark's data is a few MB, and the machine
  // is shared, so 256 MB holds all of it many times over.
  shared_buffers: "256MB",
  effective_cache_size: "1GB",
  timezone: "UTC",
  log_timezone: "UTC",
  log_min_messages: "warning",
};

export type StatementCounts = Map<string, { calls: number; query: string }>;

export type BenchPostgres = {
  cluster: PostgresCluster;
  /** Whether pg_stat_statements is loaded (statements per request can be counted). */
  statementsTracked: boolean;
  settings: Record<string, string>;
  /** The PostgreSQL version, e.g. "15.14". */
  version: string;
  /** A new empty database owned by the app role; its URL (as the app role). */
  createDatabase(name: string): Promise<string>;
  /** CPU of the whole cluster (postmaster and its children), clock ticks. */
  cpuTicks(): number;
  /** pg_stat_statements' calls per statement of one database, now; empty when not tracked. */
  statements(database: string): Promise<StatementCounts>;
  stop(): Promise<void>;
};

export async function startBenchPostgres(): Promise<BenchPostgres> {
  const bin = await findPostgresBinaries();
  const statementsTracked = hasLibrary(bin, "pg_stat_statements");
  const settings: Record<string, string> = { ...BENCH_SETTINGS };
  if (statementsTracked) {
    settings.shared_preload_libraries = "pg_stat_statements";
    // Top-level statements, BEGIN and COMMIT included: what the server sends.
    settings["pg_stat_statements.track"] = "top";
    settings["pg_stat_statements.track_utility"] = "on";
  }
  const cluster = await startPostgresCluster({ settings, bin });
  let admin: pg.Client | undefined;
  try {
    admin = new pg.Client({ connectionString: cluster.adminUrl });
    admin.on("error", () => undefined);
    await admin.connect();
    await admin.query(`CREATE ROLE "${APP_ROLE}" LOGIN`);
    if (statementsTracked) await admin.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    const version = (await admin.query<{ server_version: string }>("SHOW server_version")).rows[0]!.server_version;
    const client = admin;
    const databaseIds = new Map<string, number>();
    return {
      cluster,
      statementsTracked,
      settings,
      version,
      async createDatabase(name) {
        if (!/^\w+$/.test(name)) throw new Error(`unsuitable database name ${name}`);
        await client.query(`CREATE DATABASE "${name}" OWNER "${APP_ROLE}"`);
        databaseIds.set(name, (await client.query<{ oid: number }>("SELECT oid FROM pg_database WHERE datname = $1", [name])).rows[0]!.oid);
        return databaseUrl(cluster.port, APP_ROLE, name);
      },
      cpuTicks: () => processTreeCpuTicks(cluster.pid),
      async statements(database) {
        const counts: StatementCounts = new Map();
        if (!statementsTracked) return counts;
        const { rows } = await client.query<{ queryid: string; calls: string; query: string }>(
          "SELECT queryid::text AS queryid, calls::text AS calls, query FROM pg_stat_statements WHERE dbid = $1",
          [databaseIds.get(database)],
        );
        for (const row of rows) counts.set(row.queryid, { calls: Number(row.calls), query: row.query });
        return counts;
      },
      async stop() {
        await client.end().catch(() => undefined);
        await cluster.stop();
      },
    };
  } catch (error) {
    await admin?.end().catch(() => undefined);
    await cluster.stop();
    throw new Error(`Preparing the benchmark's PostgreSQL failed: ${error instanceof Error ? error.message : String(error)}\n${cluster.output()}`, { cause: error });
  }
}

/** Statements run between two snapshots: calls per statement, and the total. */
export function statementDelta(before: StatementCounts, after: StatementCounts): { total: number; byQuery: Map<string, { calls: number; query: string }> } {
  const byQuery = new Map<string, { calls: number; query: string }>();
  let total = 0;
  for (const [id, now] of after) {
    const calls = now.calls - (before.get(id)?.calls ?? 0);
    if (calls <= 0) continue;
    byQuery.set(id, { calls, query: now.query });
    total += calls;
  }
  return { total, byQuery };
}

/**
 * The steps' own statements among `byQuery`: all of them less the request limiter's, as
 * tests/integration/statements-per-step.test.ts leaves them out. The limiter writes its counters in a transaction of
 * their own (its once-a-second flush, and a key's first request of a window: BEGIN, the cleanup of expired counters,
 * the upserts, COMMIT), whatever the request; its statements name "RateLimit" (an account's write budget, which a
 * write pays, also does, and is kept: its spending returns the budgets' keys), and its transactions are counted by their
 * cleanup, one each.
 */
export function stepStatements(byQuery: Map<string, { calls: number; query: string }>): number {
  let total = 0;
  for (const { calls, query } of byQuery.values()) {
    const limiter = query.includes('"RateLimit"') && !query.includes('RETURNING "key", "count", "windowEndsAt"');
    if (!limiter) total += calls;
    // The limiter's BEGIN and COMMIT were counted above with everyone else's: one pair per cleanup.
    else if (/^\s*DELETE FROM "RateLimit"/.test(query)) total -= 2 * calls;
  }
  return total;
}
