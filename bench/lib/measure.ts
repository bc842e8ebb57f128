import type { BenchCase, Prepared } from "./cases.ts";
import { machineBusyTicks } from "./cpu.ts";
import type { Driver } from "./driver.ts";
import { statementDelta, stepStatements, type StatementCounts } from "./postgres.ts";
import { median, percentile } from "./stats.ts";

/** Concurrent workers of the throughput runs. */
export const CONCURRENCY = 32;
/** The sequential run is measured in this many equal batches; the CPU figure is the median batch's. */
export const BATCHES = 5;
/** A throughput run stops at this deadline (or when its prepared pool runs out). */
export const THROUGHPUT_SECONDS = 5;
/**
 * Lanes of the warm-up. It only has to run the hot path often enough for V8 to optimise it, which does not need
 * the requests one after another; on PostgreSQL, where each durable commit waits for the disk, sequential warm-ups
 * took most of the run.
 */
export const WARMUP_LANES = 8;
/**
 * Time limits, so that a slow disk or a busy machine (each durable commit waits for the disk) cannot stretch a run
 * without bound: the warm-up stops after WARMUP_SECONDS, each measured batch after BATCH_SECONDS, whichever comes
 * first of that and their request counts. On a quiet machine neither is reached; a batch cut short is divided by the
 * requests it sent, like any other.
 */
export const WARMUP_SECONDS = 6;
export const BATCH_SECONDS = 2;

export type Counters = { requests: number; retries: number };

/**
 * What is read around each measured stretch besides the server's CPU: on
 * PostgreSQL the cluster's CPU and pg_stat_statements' counts for the
 * server's database.
 */
export type Meters = {
  postgres?: { cpuTicks(): number; statements(): Promise<StatementCounts> };
};

type Snapshot = { wallMs: number; server: number; workers: Map<number, number>; postgres: number; machine: number; benchMicros: number; statements?: StatementCounts };

/** Before a stretch: the statement counts first (a query, whose own CPU stays outside), then the CPU counters. */
async function snapshotBefore(driver: Driver, meters: Meters): Promise<Snapshot> {
  const statements = await meters.postgres?.statements();
  const cpu = process.cpuUsage();
  return {
    statements,
    server: driver.server.cpuTicks(),
    workers: driver.server.workerCpuTicks(),
    postgres: meters.postgres?.cpuTicks() ?? 0,
    machine: machineBusyTicks(),
    benchMicros: cpu.user + cpu.system,
    wallMs: performance.now(),
  };
}

/** After a stretch: the CPU counters first, then the statement counts. */
async function snapshotAfter(driver: Driver, meters: Meters): Promise<Snapshot> {
  const wallMs = performance.now();
  const cpu = process.cpuUsage();
  const snapshot: Snapshot = {
    wallMs,
    benchMicros: cpu.user + cpu.system,
    server: driver.server.cpuTicks(),
    workers: driver.server.workerCpuTicks(),
    postgres: meters.postgres?.cpuTicks() ?? 0,
    machine: machineBusyTicks(),
  };
  snapshot.statements = await meters.postgres?.statements();
  return snapshot;
}

export type StretchFigures = {
  requests: number;
  /** Server CPU (the process, or the primary and its workers) per request, µs. */
  serverCpuMicros: number;
  /** PostgreSQL's CPU (the whole cluster) per request, µs; undefined on SQLite. */
  postgresCpuMicros?: number;
  /** This benchmark process's CPU (the client) per request, µs. */
  clientCpuMicros: number;
  /** Statements run on the server's database (pg_stat_statements); undefined when not counted. */
  statements?: { total: number; byQuery: Map<string, { calls: number; query: string }> };
  /** Cores kept busy meanwhile by everything else on the machine (busy time of all cores less server, PostgreSQL and this process). */
  otherCores: number;
  /** With several server processes: each one's share of the server's CPU (the primary's is the rest). */
  workerShares?: number[];
  seconds: number;
};

function figures(before: Snapshot, after: Snapshot, requests: number, ticksPerSecond: number, meters: Meters): StretchFigures {
  const micros = (ticks: number) => (ticks * 1e6) / ticksPerSecond;
  const seconds = (after.wallMs - before.wallMs) / 1000;
  const server = after.server - before.server;
  const postgres = after.postgres - before.postgres;
  const bench = ((after.benchMicros - before.benchMicros) * ticksPerSecond) / 1e6;
  const others = after.machine - before.machine - server - postgres - bench;
  return {
    requests,
    serverCpuMicros: micros(server) / requests,
    postgresCpuMicros: meters.postgres ? micros(postgres) / requests : undefined,
    clientCpuMicros: (after.benchMicros - before.benchMicros) / requests,
    statements: before.statements && after.statements ? statementDelta(before.statements, after.statements) : undefined,
    otherCores: Math.max(0, others / ticksPerSecond / seconds),
    workerShares: after.workers.size ? [...after.workers].map(([pid, ticks]) => (ticks - (before.workers.get(pid) ?? 0)) / Math.max(server, 1)) : undefined,
    seconds,
  };
}

/**
 * Sends one prepared request and times only that (fetch + reading the body).
 * When the server asks for a new DPoP nonce, the attempt is discarded: a new
 * proof is signed outside the timer and the retry is what gets timed.
 */
export async function timedRequest(driver: Driver, benchCase: BenchCase, item: Prepared, lane: number, counters: Counters): Promise<number> {
  let current = item;
  for (let attempt = 0; attempt < 3; attempt++) {
    const started = performance.now();
    const result = await benchCase.send(current, lane);
    const elapsed = performance.now() - started;
    counters.requests++;
    if (driver.observe(result)) {
      counters.retries++;
      const [fresh] = await benchCase.prepare(1);
      if (!fresh) throw new Error(`${benchCase.name}: could not prepare a retry`);
      current = fresh;
      continue;
    }
    benchCase.accept(result, lane);
    return elapsed;
  }
  throw new Error(`${benchCase.name}: the server kept asking for a new DPoP nonce`);
}

export type SequentialResult = {
  medianMs: number;
  p99Ms: number;
  /** Median batch's server CPU per request, µs. */
  serverCpuMicrosPerRequest: number;
  /** Median batch's PostgreSQL CPU per request, µs (PostgreSQL only). */
  postgresCpuMicrosPerRequest?: number;
  /** Statements per request over all batches (PostgreSQL with pg_stat_statements only). */
  statementsPerRequest?: number;
  /** The same less the request limiter's once-a-second writes (postgres.ts, stepStatements): the step's own. */
  stepStatementsPerRequest?: number;
  /** The statements behind that figure, most frequent first, with calls per request. */
  statements?: { query: string; perRequest: number }[];
  /** Median batch's cores kept busy by the rest of the machine. */
  otherCores: number;
  /** Per batch, in order. */
  batches: StretchFigures[];
  requests: number;
  retries: number;
};

/**
 * Warm-up (V8 compiles the hot path during the first few hundred requests: a
 * one-time cost, not a per-request one; sent over WARMUP_LANES lanes at once),
 * then `iterations` requests one after
 * another in BATCHES batches (each within BATCH_SECONDS). CPU comes from /proc counters around each
 * batch's timed loop only; the median batch is reported, so a burst of
 * interference from elsewhere on a shared machine moves one batch, not the figure.
 */
export async function runSequential(driver: Driver, benchCase: BenchCase, ticksPerSecond: number, meters: Meters = {}): Promise<SequentialResult> {
  await benchCase.setupLanes(WARMUP_LANES);
  const warmupItems = await benchCase.prepare(benchCase.warmup);
  await runLanes(driver, benchCase, warmupItems, WARMUP_LANES, performance.now() + WARMUP_SECONDS * 1000, { requests: 0, retries: 0 });

  const counters: Counters = { requests: 0, retries: 0 };
  const latencies: number[] = [];
  const batches: StretchFigures[] = [];
  for (let batch = 0; batch < BATCHES; batch++) {
    const items = await benchCase.prepare(Math.ceil(benchCase.iterations / BATCHES));
    const sentBefore = counters.requests;
    const before = await snapshotBefore(driver, meters);
    const deadline = before.wallMs + BATCH_SECONDS * 1000;
    for (const item of items) {
      if (performance.now() >= deadline) break;
      latencies.push(await timedRequest(driver, benchCase, item, 0, counters));
    }
    const after = await snapshotAfter(driver, meters);
    batches.push(figures(before, after, counters.requests - sentBefore, ticksPerSecond, meters));
  }

  latencies.sort((a, b) => a - b);
  const mid = (values: number[]) => median([...values].sort((a, b) => a - b));
  const result: SequentialResult = {
    medianMs: median(latencies),
    p99Ms: percentile(latencies, 99),
    serverCpuMicrosPerRequest: mid(batches.map((b) => b.serverCpuMicros)),
    otherCores: mid(batches.map((b) => b.otherCores)),
    batches,
    requests: counters.requests,
    retries: counters.retries,
  };
  if (meters.postgres) result.postgresCpuMicrosPerRequest = mid(batches.map((b) => b.postgresCpuMicros!));
  if (batches.every((b) => b.statements)) {
    const byQuery = new Map<string, { calls: number; query: string }>();
    for (const b of batches) {
      for (const [id, { calls, query }] of b.statements!.byQuery) byQuery.set(id, { calls: (byQuery.get(id)?.calls ?? 0) + calls, query });
    }
    const total = batches.reduce((sum, b) => sum + b.statements!.total, 0);
    const requests = batches.reduce((sum, b) => sum + b.requests, 0);
    result.statementsPerRequest = total / requests;
    result.stepStatementsPerRequest = stepStatements(byQuery) / requests;
    result.statements = [...byQuery.values()]
      .sort((a, b) => b.calls - a.calls)
      .map(({ calls, query }) => ({ query: query.replace(/\s+/g, " ").slice(0, 200), perRequest: calls / requests }));
  }
  return result;
}

export type ThroughputResult = {
  concurrency: number;
  rps: number;
  completed: number;
  seconds: number;
  serverCpuMicrosPerRequest: number;
  postgresCpuMicrosPerRequest?: number;
  clientCpuMicrosPerRequest: number;
  statementsPerRequest?: number;
  otherCores: number;
  /** With several server processes: each one's share of the server's CPU. */
  workerShares?: number[];
};

/**
 * `concurrency` workers share a pool of prepared requests sized for about
 * THROUGHPUT_SECONDS at `estimatedRps` (at most the case's maxThroughputCount),
 * and stop early at that deadline. Each worker is a lane (refresh: its own
 * token chain); fetch opens a connection per busy worker, so with several
 * server processes the connections, and so the requests, are spread over them.
 */
export async function runThroughput(
  driver: Driver,
  benchCase: BenchCase,
  options: { estimatedRps: number; ticksPerSecond: number; concurrency?: number; meters?: Meters; seconds?: number },
): Promise<ThroughputResult> {
  const concurrency = options.concurrency ?? CONCURRENCY;
  const meters = options.meters ?? {};
  const limit = options.seconds ?? THROUGHPUT_SECONDS;
  await benchCase.setupLanes(concurrency);
  const count = Math.round(Math.min(benchCase.maxThroughputCount, Math.max(200, options.estimatedRps * limit)));
  const items = await benchCase.prepare(count);

  const counters: Counters = { requests: 0, retries: 0 };
  const before = await snapshotBefore(driver, meters);
  const completed = await runLanes(driver, benchCase, items, concurrency, before.wallMs + limit * 1000, counters);
  const after = await snapshotAfter(driver, meters);
  const stretch = figures(before, after, counters.requests, options.ticksPerSecond, meters);
  return {
    concurrency,
    rps: completed / stretch.seconds,
    completed,
    seconds: stretch.seconds,
    serverCpuMicrosPerRequest: stretch.serverCpuMicros,
    postgresCpuMicrosPerRequest: stretch.postgresCpuMicros,
    clientCpuMicrosPerRequest: stretch.clientCpuMicros,
    statementsPerRequest: stretch.statements ? stretch.statements.total / stretch.requests : undefined,
    otherCores: stretch.otherCores,
    workerShares: stretch.workerShares,
  };
}

/** `lanes` workers take prepared requests from `items` until it runs out or the deadline passes; returns how many completed. */
async function runLanes(driver: Driver, benchCase: BenchCase, items: Prepared[], lanes: number, deadline: number, counters: Counters): Promise<number> {
  let next = 0;
  let completed = 0;
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      while (next < items.length && performance.now() < deadline) {
        const item = items[next++]!;
        await timedRequest(driver, benchCase, item, lane, counters);
        completed++;
      }
    }),
  );
  return completed;
}
