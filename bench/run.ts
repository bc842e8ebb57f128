import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { compareConfigurations, type CaseMaker, type ComparisonRow, type Contender } from "./lib/configurations.ts";
import { startBenchAppview } from "./lib/appview.ts";
import {
  codeExchangeCase,
  createRecordCase,
  createSessionCase,
  getSessionCase,
  parCase,
  passwordGetSessionCase,
  proxyCase,
  refreshCase,
  refreshSessionCase,
  userinfoCase,
  type BenchCase,
} from "./lib/cases.ts";
import { clockTicksPerSecond } from "./lib/cpu.ts";
import { Driver } from "./lib/driver.ts";
import { measureFloor, measurePostgresFloor, type PostgresFloor } from "./lib/floor.ts";
import { CONCURRENCY, runSequential, runThroughput, timedRequest, type Counters, type Meters, type ThroughputResult } from "./lib/measure.ts";
import { startPlcDirectory } from "../scripts/lib/plc-directory.ts";
import { startBenchPostgres, type BenchPostgres } from "./lib/postgres.ts";
import { PROJECT_ROOT as ROOT } from "../scripts/lib/server-process.ts";
import { CONFIGURATIONS, startServer, type Configuration } from "./lib/server.ts";
import { measureSpeed, SPEED_TARGETS, type SpeedReport } from "./lib/speed.ts";
import { benchRepository, describeRepository, type RepositoryReport } from "./repository.ts";
import { median, round } from "./lib/stats.ts";
import { summarize, type ProfileWindow } from "./profile-summary.ts";

/**
 * `npm run bench [-- --engine sqlite|postgresql|both]`: latency, throughput
 * and CPU per request of the hot OAuth and XRPC paths, against the built
 * server started as in production, on SQLite and on PostgreSQL (a private
 * cluster started for the run, with production settings), each compared with
 * a floor of its own measured on this machine in the same run. Writes
 * bench/results/latest.json. A benchmark reports: it never fails on a
 * missed target.
 *
 * `npm run bench -- --profile [--profile-dir /tmp/prof] [--engine …]` instead
 * runs the server under --cpu-prof, once for a getSession loop and once for a
 * refresh loop (or for the --cases named among getSession, refresh, par and proxy),
 * and prints where the server's CPU goes (on SQLite unless --engine says
 * otherwise).
 */

const RESULTS = path.resolve(import.meta.dirname, "results", "latest.json");
/** The throughput runs with one and with two server processes cover these cases. */
const SCALED_CASES = ["getSession", "refresh"];
/** Requests sent at full concurrency to a fresh server of several processes before its throughput is measured (every worker warms up), within a time limit. */
const CONCURRENT_WARMUP = { requests: 4000, seconds: 5 };
/**
 * Code exchange gets no throughput run: each code costs a PAR and an approval to make (on PostgreSQL some 30 ms of
 * durable commits), and the 200 a pool could afford spread over 32 lanes never reach a steady state.
 */
const NO_THROUGHPUT = ["code-exchange", "createSession"];

type Engine = "sqlite" | "postgresql";
const ENGINE_LABEL: Record<Engine, string> = { sqlite: "SQLite", postgresql: "PostgreSQL" };

type CaseResult = {
  name: string;
  medianMs: number;
  p99Ms: number;
  serverCpuMicrosPerRequest: number;
  /** Server CPU per request ÷ this engine's floor (its client-side CPU on PostgreSQL). */
  floorMultiple: number;
  /** PostgreSQL only: the cluster's CPU per request, and that ÷ the floor's PostgreSQL CPU. */
  postgresCpuMicrosPerRequest?: number;
  postgresFloorMultiple?: number;
  /** PostgreSQL with pg_stat_statements: statements per request, BEGIN and COMMIT included, and which. */
  statementsPerRequest?: number;
  /** The same less the request limiter's once-a-second writes: the step's own (bench/lib/postgres.ts, stepStatements). */
  stepStatementsPerRequest?: number;
  statements?: { query: string; perRequest: number }[];
  /** Server CPU per request of each sequential batch (the figure is their median). */
  batchServerCpuMicros: number[];
  batchPostgresCpuMicros?: number[];
  /** Cores kept busy by other work on the machine during the median batch (noise). */
  otherCores: number;
  retries: number;
};

type ThroughputRow = { name: string; processes: number } & ThroughputResult;

type Floor = {
  /** The figure server CPU is divided by: SQLite's in-process loop, or the PostgreSQL loop's client-side CPU. µs per iteration. */
  cpuMicros: number;
  before: number;
  after: number;
  /** PostgreSQL only. */
  postgres?: { before: PostgresFloor; after: PostgresFloor; postgresCpuMicros: number; backendCpuMicros: number; wallMicros: number };
};

type EngineReport = {
  engine: Engine;
  version?: string;
  settings?: Record<string, string>;
  statementsCounted?: boolean;
  floor: Floor;
  cases: CaseResult[];
  throughput: ThroughputRow[];
  /** The production defaults (and metrics) against the bare server, measured side by side (bench/lib/configurations.ts). */
  configurations?: ComparisonRow[];
  /**
   * The speed targets' figures: the HTTP floor's server, getSession, refresh, PAR and a proxied call, each on a process
   * of its own, request by request in turn (bench/lib/speed.ts); absent when --cases leaves getSession out.
   */
  speed?: SpeedReport;
  loadAverage: { start: number[]; end: number[] };
  seconds: number;
  /**
   * createRecord on a 10,000-record repository against @atproto/repo's floor, and the firehose (bench/repository.ts);
   * absent when --cases leaves createRecord out.
   */
  repository?: RepositoryReport;
};

/** `count`: the figure is a number of things (statements), not a multiple. */
type Target = { engine: Engine; name: string; description: string; limit: number; actual?: number; met?: boolean; count?: true };

/** Everything started that must be stopped on an error or a signal, last first. */
const stoppers: (() => Promise<void>)[] = [];

/** Set on SIGINT or SIGTERM: what fails from then on fails because it is being stopped. */
let interrupted = false;

/** Runs `body`; `stop` runs once afterwards, or earlier on a signal. */
async function withStopper<T>(stopOnce: () => Promise<void>, body: () => Promise<T>): Promise<T> {
  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= stopOnce());
  stoppers.push(stop);
  try {
    return await body();
  } finally {
    stoppers.splice(stoppers.indexOf(stop), 1);
    await stop();
  }
}

async function withServer<T>(options: Parameters<typeof startServer>[0], run: (driver: Driver) => Promise<T>): Promise<T> {
  const server = await startServer(options);
  return withStopper(
    () => server.stop(),
    async () => {
      try {
        return await run(await Driver.create(server));
      } catch (error) {
        if (!interrupted) console.error(server.output().slice(-2000));
        throw error;
      }
    },
  );
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row, index) => {
      const line = row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join("  ");
      return index === 0 ? `${line}\n${"-".repeat(line.length)}` : line;
    })
    .join("\n");
}

const fixed = (value: number | undefined, digits = 0) => (value === undefined || Number.isNaN(value) ? "–" : value.toFixed(digits));

/** Every case, in the order they run (the access token for the resource cases is obtained once per server). */
const CASES: CaseMaker[] = [
  { name: "par", make: (driver) => parCase(driver) },
  { name: "code-exchange", make: (driver) => codeExchangeCase(driver) },
  { name: "refresh", make: (driver) => refreshCase(driver) },
  { name: "userinfo", make: (driver, accessToken) => userinfoCase(driver, accessToken) },
  { name: "getSession", make: (driver, accessToken) => getSessionCase(driver, accessToken) },
  { name: "proxy", make: (driver, accessToken) => proxyCase(driver, accessToken) },
  { name: "createRecord", make: (driver, accessToken) => createRecordCase(driver, accessToken) },
  // docs/decisions/0047: password sessions, beside the OAuth figures of the same run.
  { name: "createSession", make: (driver) => createSessionCase(driver) },
  { name: "refreshSession", make: (driver) => refreshSessionCase(driver) },
  { name: "getSession-password", make: (driver) => passwordGetSessionCase(driver) },
];

/** The case constructors this run measures (--cases), in the order they run. */
function allCases(driver: Driver, accessToken: string): { name: string; make: () => Promise<BenchCase> | BenchCase }[] {
  return selectedCases().map(({ name, make }) => ({ name, make: () => make(driver, accessToken) }));
}

function selectedCases(): CaseMaker[] {
  return options.cases ? CASES.filter((c) => options.cases!.includes(c.name)) : CASES;
}

/** Starts one server per configuration, all at once, and hands their drivers over; stops them all afterwards. */
async function withServers<T>(
  configurations: readonly Configuration[],
  serverOptions: (configuration: Configuration) => Promise<Parameters<typeof startServer>[0]>,
  run: (drivers: Driver[]) => Promise<T>,
  started: Driver[] = [],
): Promise<T> {
  const [first, ...rest] = configurations;
  if (first === undefined) return run(started);
  return withServer({ ...(await serverOptions(first)), configuration: first }, (driver) => withServers(rest, serverOptions, run, [...started, driver]));
}

/** Requests per second a throughput pool is sized for: what the server processes' CPU allows, with room to spare. */
function estimatedRps(serverCpuMicros: number, processes: number): number {
  return (1.5 * 1e6 * processes) / Math.max(serverCpuMicros, 50);
}

function logThroughput(row: ThroughputRow): void {
  const postgres = row.postgresCpuMicrosPerRequest === undefined ? "" : `, PostgreSQL ${row.postgresCpuMicrosPerRequest.toFixed(0)}`;
  const statements = row.statementsPerRequest === undefined ? "" : `, ${row.statementsPerRequest.toFixed(1)} statements`;
  console.log(
    `    ${row.name} at concurrency ${row.concurrency}, ${row.processes} server process${row.processes > 1 ? "es" : ""}: ${row.completed} in ${row.seconds.toFixed(1)} s = ${row.rps.toFixed(0)} rps ` +
      `(µs/req: server ${row.serverCpuMicrosPerRequest.toFixed(0)}${postgres}, client ${row.clientCpuMicrosPerRequest.toFixed(0)}${statements}; other work ${row.otherCores.toFixed(2)} cores` +
      `${row.workerShares ? `; server CPU by worker ${row.workerShares.map((share) => `${(share * 100).toFixed(0)} %`).join(" / ")}` : ""})`,
  );
}

/** One engine: its floor, every case on one server process, then the scaled cases on two; the floor again. */
async function benchEngine(engine: Engine, ticksPerSecond: number): Promise<EngineReport> {
  const started = performance.now();
  const loadStart = os.loadavg();
  console.log(`\n=== ${ENGINE_LABEL[engine]} ===`);
  let postgres: BenchPostgres | undefined;
  if (engine === "postgresql") {
    console.log("Starting a private PostgreSQL cluster for the run (fsync and synchronous commit on)…");
    postgres = await startBenchPostgres();
    console.log(
      `  PostgreSQL ${postgres.version}, postmaster pid ${postgres.cluster.pid}, port ${postgres.cluster.port}; ` +
        (postgres.statementsTracked ? "pg_stat_statements loaded" : "pg_stat_statements not installed: statements are not counted"),
    );
  }
  const run = async (pg?: BenchPostgres): Promise<EngineReport> => {
    const measureTheFloor = async (): Promise<{ cpuMicros: number; postgres?: PostgresFloor }> => {
      if (!pg) return measureFloor(5000);
      const floorUrl = floorDatabase ?? (floorDatabase = await pg.createDatabase("atrium_floor"));
      const result = await measurePostgresFloor(floorUrl, () => pg.cpuTicks(), ticksPerSecond);
      return { cpuMicros: result.clientCpuMicros, postgres: result };
    };
    let floorDatabase: string | undefined;
    const describeFloor = (floor: { cpuMicros: number; postgres?: PostgresFloor }) =>
      floor.postgres
        ? `client ${floor.postgres.clientCpuMicros.toFixed(1)} µs, PostgreSQL ${floor.postgres.postgresCpuMicros.toFixed(1)} µs (its backend ${floor.postgres.backendCpuMicros.toFixed(1)} µs), ${floor.postgres.wallMicros.toFixed(0)} µs wall per iteration`
        : `${floor.cpuMicros.toFixed(1)} µs CPU per iteration`;

    console.log(
      engine === "sqlite"
        ? "Measuring the floor (ES256 verify + SQLite INSERT + SELECT by key, in-process)…"
        : "Measuring the floor (ES256 verify + INSERT + SELECT by key through pg, named prepared statements, durable commits)…",
    );
    const floorBefore = await measureTheFloor();
    console.log(`  floor: ${describeFloor(floorBefore)}`);

    const meters = (database: string): Meters =>
      pg ? { postgres: { cpuTicks: () => pg.cpuTicks(), statements: () => pg.statements(database) } } : {};
    const serverOptions = async (database: string) => (pg ? { databaseUrl: await pg.createDatabase(database) } : {});

    const cases: CaseResult[] = [];
    const throughput: ThroughputRow[] = [];
    // The bare server's full measurement (--configurations-only and --speed-only skip it and the two-process run).
    const fullRun = !options.configurationsOnly && !options.speedOnly;
    if (fullRun) await withServer(await serverOptions("atrium_bench_1"), async (driver) => {
      console.log(`Server pid ${driver.server.pid} at ${driver.issuer}; clock ticks ${ticksPerSecond}/s`);
      const session = await driver.obtainTokens(); // the access token for the resource cases
      const caseMeters = meters("atrium_bench_1");
      for (const { make } of allCases(driver, session.access_token)) {
        const benchCase = await make();
        const sequential = await runSequential(driver, benchCase, ticksPerSecond, caseMeters);
        const perBatch = sequential.batches.map((b) => b.serverCpuMicros.toFixed(0)).join(", ");
        const postgresPerBatch = pg ? `; PostgreSQL ${sequential.batches.map((b) => b.postgresCpuMicros!.toFixed(0)).join(", ")}` : "";
        const statements = sequential.statementsPerRequest === undefined ? "" : `; ${sequential.statementsPerRequest.toFixed(2)} statements/req`;
        console.log(
          `  ${benchCase.name}: ${sequential.requests} sequential, µs/req per batch: server ${perBatch}${postgresPerBatch}${statements}; ` +
            `${sequential.retries} nonce retries; other work ${sequential.otherCores.toFixed(2)} cores`,
        );
        if (!NO_THROUGHPUT.includes(benchCase.name)) {
          const row: ThroughputRow = {
            name: benchCase.name,
            processes: 1,
            ...(await runThroughput(driver, benchCase, { estimatedRps: estimatedRps(sequential.serverCpuMicrosPerRequest, 1), ticksPerSecond, meters: caseMeters })),
          };
          logThroughput(row);
          throughput.push(row);
        }
        cases.push({
          name: benchCase.name,
          medianMs: round(sequential.medianMs, 3),
          p99Ms: round(sequential.p99Ms, 3),
          serverCpuMicrosPerRequest: round(sequential.serverCpuMicrosPerRequest, 1),
          floorMultiple: 0, // once the floor is measured again
          postgresCpuMicrosPerRequest: sequential.postgresCpuMicrosPerRequest === undefined ? undefined : round(sequential.postgresCpuMicrosPerRequest, 1),
          statementsPerRequest: sequential.statementsPerRequest === undefined ? undefined : round(sequential.statementsPerRequest, 2),
          stepStatementsPerRequest: sequential.stepStatementsPerRequest === undefined ? undefined : round(sequential.stepStatementsPerRequest, 2),
          statements: sequential.statements?.map((s) => ({ query: s.query, perRequest: round(s.perRequest, 3) })),
          batchServerCpuMicros: sequential.batches.map((b) => round(b.serverCpuMicros, 1)),
          batchPostgresCpuMicros: pg ? sequential.batches.map((b) => round(b.postgresCpuMicros!, 1)) : undefined,
          otherCores: round(sequential.otherCores, 2),
          retries: sequential.retries,
        });
      }
    });

    // Two server processes (ATRIUM_WORKERS=2) on a fresh database: the scaled cases at full concurrency only.
    if (fullRun) console.log(`Two server processes (ATRIUM_WORKERS=2), concurrency ${CONCURRENCY}:`);
    if (fullRun) await withServer({ ...(await serverOptions("atrium_bench_2")), workers: 2 }, async (driver) => {
      const session = await driver.obtainTokens();
      const caseMeters = meters("atrium_bench_2");
      for (const { name, make } of allCases(driver, session.access_token)) {
        if (!SCALED_CASES.includes(name)) continue;
        const benchCase = await make();
        const single = cases.find((c) => c.name === benchCase.name)!;
        // The warm-up at full concurrency, so that both workers get connections and compile their hot paths.
        await runThroughput(driver, benchCase, { estimatedRps: CONCURRENT_WARMUP.requests / CONCURRENT_WARMUP.seconds, ticksPerSecond, seconds: CONCURRENT_WARMUP.seconds });
        const row: ThroughputRow = {
          name: benchCase.name,
          processes: 2,
          ...(await runThroughput(driver, benchCase, { estimatedRps: estimatedRps(single.serverCpuMicrosPerRequest, 2), ticksPerSecond, meters: caseMeters })),
        };
        logThroughput(row);
        throughput.push(row);
      }
    });

    const speedDatabase = (name: string) => `atrium_speed_${name.replace(/\W/g, "_").toLowerCase()}`;
    // Issue 28's speed targets, and the proxy's own cost (docs/decisions/0048): the HTTP floor's server and one bare
    // server per case, request by request in turn (bench/lib/speed.ts).
    let speed: SpeedReport | undefined;
    if (!options.configurationsOnly && selectedCases().some((c) => c.name === "getSession")) {
      console.log("Speed against the HTTP floor, side by side (the HTTP floor's server and a server per case, request by request):");
      speed = await measureSpeed({
        cases: selectedCases(),
        withServer: async (name, body) => withServer(await serverOptions(speedDatabase(name)), body),
        floorDatabase: pg ? () => pg.createDatabase("atrium_http_floor") : undefined,
        statements: pg?.statementsTracked ? (name) => pg.statements(speedDatabase(name)) : undefined,
        ticksPerSecond,
        log: (line) => console.log(line),
      });
    }

    // The production defaults against the bare server, side by side (docs/decisions/0035).
    let comparison: ComparisonRow[] | undefined;
    if (options.configurations.length > 1 && !options.speedOnly) {
      console.log(`Configurations side by side (${options.configurations.join(", ")}), request by request:`);
      comparison = await withServers(
        options.configurations,
        (configuration) => serverOptions(`atrium_bench_${configuration}`),
        async (drivers) => {
          const contenders: Contender[] = [];
          for (const [index, driver] of drivers.entries()) {
            const configuration = options.configurations[index]!;
            contenders.push({ configuration, driver, accessToken: (await driver.obtainTokens()).access_token });
          }
          return compareConfigurations(contenders, selectedCases(), { ticksPerSecond, log: (line) => console.log(line) });
        },
      );
    }

    // Measured again after the servers ran: on a shared machine the two differ, and the mean brackets the run.
    const floorAfter = await measureTheFloor();
    const floor: Floor = { cpuMicros: (floorBefore.cpuMicros + floorAfter.cpuMicros) / 2, before: floorBefore.cpuMicros, after: floorAfter.cpuMicros };
    console.log(`  floor again: ${describeFloor(floorAfter)}; using the mean of the two`);
    if (floorBefore.postgres && floorAfter.postgres) {
      const mean = (key: keyof PostgresFloor) => (floorBefore.postgres![key] + floorAfter.postgres![key]) / 2;
      floor.postgres = {
        before: floorBefore.postgres,
        after: floorAfter.postgres,
        postgresCpuMicros: mean("postgresCpuMicros"),
        backendCpuMicros: mean("backendCpuMicros"),
        wallMicros: mean("wallMicros"),
      };
    }
    for (const c of cases) {
      c.floorMultiple = round(c.serverCpuMicrosPerRequest / floor.cpuMicros, 2);
      if (floor.postgres && c.postgresCpuMicrosPerRequest !== undefined) c.postgresFloorMultiple = round(c.postgresCpuMicrosPerRequest / floor.postgres.postgresCpuMicros, 2);
    }
    // Minutes an engine on a busy machine: only when the repository's case is asked for.
    // A failure there (printed) leaves the repository's figures out rather than the whole run's.
    const repository = selectedCases().some((c) => c.name === "createRecord")
      ? await benchRepository(pg).catch((error: unknown) => {
          if (interrupted) throw error;
          console.error(`The repository's cases failed; their figures are left out:`, error);
          return undefined;
        })
      : undefined;
    return {
      engine,
      repository,
      version: pg?.version,
      settings: pg?.settings,
      statementsCounted: pg ? pg.statementsTracked : undefined,
      floor: roundFloor(floor),
      cases,
      throughput: throughput.map(roundThroughput),
      configurations: comparison,
      speed,
      loadAverage: { start: loadStart.map((v) => round(v, 2)), end: os.loadavg().map((v) => round(v, 2)) },
      seconds: round((performance.now() - started) / 1000, 1),
    };
  };
  if (!postgres) return run();
  const cluster = postgres;
  return withStopper(
    async () => {
      await cluster.stop();
      console.log("  PostgreSQL cluster stopped and removed");
    },
    () => run(cluster),
  );
}

function roundFloor(floor: Floor): Floor {
  const roundPg = (f: PostgresFloor): PostgresFloor => ({
    clientCpuMicros: round(f.clientCpuMicros, 1),
    postgresCpuMicros: round(f.postgresCpuMicros, 1),
    backendCpuMicros: round(f.backendCpuMicros, 1),
    wallMicros: round(f.wallMicros, 1),
  });
  return {
    cpuMicros: round(floor.cpuMicros, 1),
    before: round(floor.before, 1),
    after: round(floor.after, 1),
    postgres: floor.postgres && {
      before: roundPg(floor.postgres.before),
      after: roundPg(floor.postgres.after),
      postgresCpuMicros: round(floor.postgres.postgresCpuMicros, 1),
      backendCpuMicros: round(floor.postgres.backendCpuMicros, 1),
      wallMicros: round(floor.postgres.wallMicros, 1),
    },
  };
}

function roundThroughput(row: ThroughputRow): ThroughputRow {
  const maybe = (value: number | undefined, digits: number) => (value === undefined ? undefined : round(value, digits));
  return {
    ...row,
    rps: round(row.rps, 1),
    seconds: round(row.seconds, 2),
    serverCpuMicrosPerRequest: round(row.serverCpuMicrosPerRequest, 1),
    postgresCpuMicrosPerRequest: maybe(row.postgresCpuMicrosPerRequest, 1),
    clientCpuMicrosPerRequest: round(row.clientCpuMicrosPerRequest, 1),
    statementsPerRequest: maybe(row.statementsPerRequest, 2),
    otherCores: round(row.otherCores, 2),
    workerShares: row.workerShares?.map((share) => round(share, 3)),
  };
}

/**
 * Targets (issue 28, "Speed, restated"): server CPU per request against the HTTP floor of the same engine, measured
 * side by side with it (the in-process floor pays no HTTP, which alone costs about 3× it here); PAR and a proxied call
 * against getSession, side by side too; PostgreSQL's statements per step; a commit's own work against @atproto/repo's.
 */
function targets(reports: EngineReport[]): Target[] {
  const find = (engine: Engine, name: string) => reports.find((r) => r.engine === engine)?.cases.find((c) => c.name === name);
  const out: Target[] = [];
  for (const report of reports) {
    for (const target of SPEED_TARGETS) {
      const measured = report.speed?.ratios.find((r) => r.of === target.of && r.to === target.to);
      if (!measured) continue;
      const actual = round(measured.ratio, 2);
      out.push({ engine: report.engine, name: target.of, description: target.description, limit: target.limit, actual, met: actual <= target.limit });
    }
  }
  // PostgreSQL's statements per step, as now (docs/decisions/0035, 0038), less the request limiter's once-a-second writes:
  // from the full run's sequential batches, else (--speed-only) from the side-by-side run's.
  for (const [name, limit] of [["getSession", 2], ["refresh", 4], ["par", 4]] as const) {
    const postgres = reports.find((r) => r.engine === "postgresql");
    const steps = find("postgresql", name)?.stepStatementsPerRequest ?? postgres?.speed?.contenders.find((c) => c.name === name)?.stepStatementsPerRequest;
    if (steps === undefined) continue;
    const actual = round(steps, 2);
    out.push({ engine: "postgresql", name, description: `PostgreSQL statements per request ≤ ${limit}`, limit, actual, met: actual <= limit, count: true });
  }
  // docs/decisions/0035: the production defaults cost at most 10 % more server CPU than the bare server.
  for (const report of reports) {
    for (const row of report.configurations ?? []) {
      const defaults = row.configurations.find((c) => c.configuration === "defaults");
      if (defaults?.overhead === undefined) continue;
      const actual = round(1 + defaults.overhead, 3);
      out.push({ engine: report.engine, name: row.name, description: "production defaults' server CPU ≤ 1.1× bare", limit: 1.1, actual, met: actual <= 1.1 });
    }
  }
  // docs/decisions/0047: a password session's getSession costs the server at most what the OAuth one does, same run.
  for (const report of reports) {
    const password = find(report.engine, "getSession-password");
    const oauth = find(report.engine, "getSession");
    if (!password || !oauth) continue;
    const actual = round(password.serverCpuMicrosPerRequest / oauth.serverCpuMicrosPerRequest, 2);
    out.push({ engine: report.engine, name: "getSession-password", description: "server CPU ≤ 1× the OAuth getSession's", limit: 1, actual, met: actual <= 1 });
  }
  // Issue 28: a single-record commit on a 10,000-record repository, less a getSession on the same server (what any
  // authenticated request costs), at most 1.5× @atproto/repo's own work (bench/repo-commit.ts).
  for (const report of reports) {
    if (!report.repository) continue;
    const actual = report.repository.commit.ownWorkFloorMultiple;
    out.push({ engine: report.engine, name: "createRecord", description: "server CPU less getSession's ≤ 1.5× @atproto/repo alone", limit: 1.5, actual, met: actual <= 1.5 });
  }
  return out;
}

function printEngine(report: EngineReport): void {
  const pg = report.engine === "postgresql";
  const rps = (name: string, processes: number) => fixed(report.throughput.find((t) => t.name === name && t.processes === processes)?.rps);
  const floor = pg
    ? `floor: client ${report.floor.cpuMicros} µs CPU, PostgreSQL ${report.floor.postgres!.postgresCpuMicros} µs CPU (its backend ${report.floor.postgres!.backendCpuMicros} µs), ${report.floor.postgres!.wallMicros.toFixed(0)} µs wall`
    : `floor: ${report.floor.cpuMicros} µs CPU`;
  console.log(`\n${ENGINE_LABEL[report.engine]}${report.version ? ` ${report.version}` : ""} (${floor}; before ${report.floor.before}, after ${report.floor.after})`);
  const head = ["case", "median ms", "p99 ms", "server µs/req", "× floor"];
  if (pg) head.push("PG µs/req", "× PG floor", "stmts/req");
  head.push(`rps@${CONCURRENCY} 1 proc`, `rps@${CONCURRENCY} 2 procs`);
  // (--speed-only: no full run, no table.)
  if (report.cases.length > 0) console.log(
    table([
      head,
      ...report.cases.map((c) => {
        const row = [c.name, c.medianMs.toFixed(2), c.p99Ms.toFixed(2), c.serverCpuMicrosPerRequest.toFixed(0), c.floorMultiple.toFixed(1)];
        if (pg) row.push(fixed(c.postgresCpuMicrosPerRequest), fixed(c.postgresFloorMultiple, 1), fixed(c.statementsPerRequest, 1));
        row.push(rps(c.name, 1), rps(c.name, 2));
        return row;
      }),
    ]),
  );
  if (report.speed) {
    console.log(`\nSide by side, server µs/req (median of ${report.speed.batches} batches of ${report.speed.roundsPerBatch} rounds):`);
    console.log(`  ${report.speed.contenders.map((c) => `${c.name} ${c.serverCpuMicrosPerRequest.toFixed(0)}`).join(", ")}`);
    console.log(`  ${report.speed.ratios.map((r) => `${r.of} ÷ ${r.to} ${r.ratio.toFixed(2)}`).join(", ")}`);
  }
  if (report.configurations?.length) {
    const names = report.configurations[0]!.configurations.map((c) => c.configuration);
    console.log("\nConfigurations side by side, server µs/req (overhead over bare):");
    const head = ["case", ...names];
    console.log(
      table([
        head,
        ...report.configurations.map((row) => {
          const cells = [row.name, ...row.configurations.map((c) => `${c.serverCpuMicrosPerRequest.toFixed(0)}${c.overhead === undefined ? "" : ` (${c.overhead >= 0 ? "+" : ""}${(c.overhead * 100).toFixed(1)} %)`}`)];
          return cells;
        }),
      ]),
    );
  }
  const others = report.cases.length > 0 ? median(report.cases.map((c) => c.otherCores).sort((a, b) => a - b)).toFixed(2) : "not measured";
  console.log(
    `other work on the machine during the measured batches: ${others} of ${os.cpus().length} cores (median over cases); ` +
      `load average ${report.loadAverage.start[0]} → ${report.loadAverage.end[0]}; ${report.seconds.toFixed(0)} s`,
  );
  if (report.repository) console.log(`repository:\n${describeRepository(report.repository)}`);
}

async function bench(engines: Engine[]): Promise<void> {
  const ticksPerSecond = clockTicksPerSecond();
  const started = performance.now();
  const reports: EngineReport[] = [];
  for (const engine of engines) reports.push(await benchEngine(engine, ticksPerSecond));

  const goals = targets(reports);
  const report = {
    date: new Date().toISOString(),
    machine: { cores: os.cpus().length, model: os.cpus()[0]?.model, node: process.version },
    concurrency: CONCURRENCY,
    engines: Object.fromEntries(reports.map((r) => [r.engine, r])),
    targets: goals,
  };
  mkdirSync(path.dirname(RESULTS), { recursive: true });
  writeFileSync(RESULTS, `${JSON.stringify(report, null, 2)}\n`);

  for (const r of reports) printEngine(r);
  const sqlite = reports.find((r) => r.engine === "sqlite");
  const postgres = reports.find((r) => r.engine === "postgresql");
  if (sqlite && postgres) {
    console.log("\nPostgreSQL ÷ SQLite, server CPU per request:");
    console.log(
      postgres.cases
        .map((c) => {
          const s = sqlite.cases.find((x) => x.name === c.name)!;
          return `  ${c.name.padEnd(13)} ${(c.serverCpuMicrosPerRequest / s.serverCpuMicrosPerRequest).toFixed(2)}×`;
        })
        .join("\n"),
    );
  }
  console.log("\nfloors: one ES256 verify + one INSERT + one SELECT by primary key (SQLite: better-sqlite3 in-process; PostgreSQL: pg, client CPU and the cluster's CPU apart); mean of before and after");
  console.log("targets (reported, never enforced):");
  for (const goal of goals) {
    const verdict = goal.met === undefined ? "n/a" : goal.met ? "MET" : "MISSED";
    console.log(`  ${ENGINE_LABEL[goal.engine].padEnd(10)} ${goal.name.padEnd(11)} ${goal.description}: ${fixed(goal.actual, 2)}${goal.count ? "" : "×"} → ${verdict}`);
  }
  console.log(`\nwrote ${path.relative(process.cwd(), RESULTS)} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
}

function sha256File(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}

/**
 * One server under --cpu-prof per case; the load window is recorded on the shared monotonic clock. On PostgreSQL the
 * servers use a private cluster started for the run, and the profiles are named postgresql-<case>.
 */
async function profile(dir: string, requests: number, engine: Engine): Promise<void> {
  if (engine === "sqlite") return profileOn(dir, requests, engine);
  console.log("Starting a private PostgreSQL cluster for the run…");
  const postgres = await startBenchPostgres();
  return withStopper(() => postgres.stop(), () => profileOn(dir, requests, engine, postgres));
}

async function profileOn(dir: string, requests: number, engine: Engine, postgres?: BenchPostgres): Promise<void> {
  mkdirSync(dir, { recursive: true });
  // The build again, with source maps, so that the summary can name the source files; the maps are copied because
  // anything else that builds (npm test) replaces build/.
  const serverBuild = path.join(ROOT, "build", "server");
  const bundle = path.join(serverBuild, "server.js");
  console.log("Building the server with source maps (remix vite:build --sourcemapServer)…");
  execFileSync(path.join(ROOT, "node_modules", ".bin", "remix"), ["vite:build", "--sourcemapServer"], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
  const bundleMaps = path.join(dir, "bundle-maps");
  rmSync(bundleMaps, { recursive: true, force: true });
  for (const file of readdirSync(serverBuild, { recursive: true, encoding: "utf8" }).filter((name) => name.endsWith(".js.map"))) {
    mkdirSync(path.dirname(path.join(bundleMaps, file)), { recursive: true });
    copyFileSync(path.join(serverBuild, file), path.join(bundleMaps, file));
  }
  const bundleHash = sha256File(bundle);
  const allPlans: { name: string; make: (driver: Driver) => Promise<BenchCase> }[] = [
    { name: "getSession", make: async (driver) => getSessionCase(driver, (await driver.obtainTokens()).access_token) },
    { name: "refresh", make: (driver) => refreshCase(driver) },
    // docs/decisions/0047: a password session's getSession, to set beside the OAuth one.
    { name: "getSession-password", make: (driver) => passwordGetSessionCase(driver) },
    { name: "proxy", make: async (driver) => proxyCase(driver, (await driver.obtainTokens()).access_token) },
    { name: "par", make: async (driver) => parCase(driver) },
  ];
  // getSession and refresh unless --cases names others.
  const plans = allPlans.filter((plan) => (options.cases ? options.cases.includes(plan.name) : ["getSession", "refresh"].includes(plan.name)));
  const prefix = engine === "sqlite" ? "" : `${engine}-`;
  for (const plan of plans) {
    // No --cpu-prof-name: the file name tells the main thread's profile from any worker thread's.
    const caseDir = path.join(dir, `${prefix}${plan.name}`);
    rmSync(caseDir, { recursive: true, force: true });
    const flags = ["--cpu-prof", `--cpu-prof-dir=${caseDir}`, "--cpu-prof-interval=200"];
    const databaseUrl = postgres ? await postgres.createDatabase(`atrium_profile_${plan.name.toLowerCase()}`) : undefined;
    const window = await withServer({ nodeFlags: flags, databaseUrl }, async (driver): Promise<ProfileWindow> => {
      if (sha256File(bundle) !== bundleHash) console.warn("  warning: build/server/ changed while profiling started; source locations may be off");
      const benchCase = await plan.make(driver);
      const counters: Counters = { requests: 0, retries: 0 };
      for (const item of await benchCase.prepare(2000)) await timedRequest(driver, benchCase, item, 0, counters);
      counters.requests = 0;
      // Proofs are signed in chunks (they must be under a minute old); the server idles meanwhile, which the summary leaves out.
      const startMicros = Number(process.hrtime.bigint() / 1000n);
      for (let done = 0; done < requests; done += 500) {
        for (const item of await benchCase.prepare(Math.min(500, requests - done))) await timedRequest(driver, benchCase, item, 0, counters);
      }
      const endMicros = Number(process.hrtime.bigint() / 1000n);
      console.log(`  ${prefix}${plan.name}: ${counters.requests} requests profiled in ${((endMicros - startMicros) / 1e6).toFixed(1)} s`);
      return { startMicros, endMicros, requests: counters.requests, bundleMaps };
    });
    // Profiles are written when the server exits (SIGTERM → process.exit), i.e. by now; the main thread's is CPU.<date>.<time>.<pid>.0.<seq>.
    const main = readdirSync(caseDir).find((file) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(file));
    if (!main) throw new Error(`no main-thread profile in ${caseDir}: ${readdirSync(caseDir).join(", ")}`);
    renameSync(path.join(caseDir, main), path.join(dir, `${prefix}${plan.name}.cpuprofile`));
    rmSync(caseDir, { recursive: true, force: true });
    writeFileSync(path.join(dir, `${prefix}${plan.name}.window.json`), `${JSON.stringify(window)}\n`);
    console.log(`\n${summarize(path.join(dir, `${prefix}${plan.name}.cpuprofile`), { window, top: 15 })}\n`);
  }
}

const { values } = parseArgs({
  options: {
    engine: { type: "string" },
    cases: { type: "string" },
    configurations: { type: "string", default: "bare,defaults" },
    "configurations-only": { type: "boolean", default: false },
    "speed-only": { type: "boolean", default: false },
    profile: { type: "boolean", default: false },
    "profile-dir": { type: "string", default: "/tmp/prof" },
    "profile-requests": { type: "string", default: "2000" },
  },
});

/**
 * --cases par,getSession: only those cases. --configurations bare,defaults[,metrics]: the configurations measured side
 * by side after the bare server's full run (one: none); --configurations-only: only that.
 */
const options = {
  cases: values.cases?.split(",").map((name) => name.trim()),
  configurations: values.configurations.split(",").map((name) => name.trim()).filter(Boolean) as Configuration[],
  configurationsOnly: values["configurations-only"],
  /** Only the side-by-side run of the speed targets (bench/lib/speed.ts), and the repository's cases if named. */
  speedOnly: values["speed-only"],
};
for (const name of options.cases ?? []) {
  if (!CASES.some((c) => c.name === name)) {
    console.error(`--cases: no case ${JSON.stringify(name)} (cases: ${CASES.map((c) => c.name).join(", ")})`);
    process.exit(2);
  }
}
for (const name of options.configurations) {
  if (!CONFIGURATIONS.includes(name)) {
    console.error(`--configurations: no configuration ${JSON.stringify(name)} (configurations: ${CONFIGURATIONS.join(", ")})`);
    process.exit(2);
  }
}

const ENGINE_CHOICES: Record<string, Engine[]> = { sqlite: ["sqlite"], postgresql: ["postgresql"], both: ["sqlite", "postgresql"] };
// Measurements cover both engines unless told otherwise; a profile stays on SQLite unless told otherwise.
const engineChoice = values.engine ?? (values.profile ? "sqlite" : "both");
const engines = ENGINE_CHOICES[engineChoice];
if (!engines) {
  console.error(`--engine must be sqlite, postgresql or both (got ${JSON.stringify(engineChoice)})`);
  process.exit(2);
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    interrupted = true;
    console.error(`\n${signal}: stopping what the benchmark started…`);
    void (async () => {
      for (const stop of [...stoppers].reverse()) await stop().catch((error: unknown) => console.error(error));
    })().finally(() => process.exit(130));
  });
}

// Accounts are registered did:plc identities (docs/decisions/0028a-plc-identity.md): a real directory on loopback,
// in memory, for the servers and the account CLI this run starts (they inherit the environment).
const plc = process.env.ATRIUM_PLC_DIRECTORY_URL ? undefined : await startPlcDirectory();
if (plc) {
  process.env.ATRIUM_PLC_DIRECTORY_URL = plc.url;
  stoppers.push(() => plc.stop());
}
// The app view the proxy case reaches (bench/lib/appview.ts), named as ATRIUM_APPVIEW for every server (they inherit it).
const appview = await startBenchAppview();
process.env.ATRIUM_APPVIEW = appview.service;
stoppers.push(() => appview.stop());

if (values.profile) {
  for (const engine of engines) await profile(path.resolve(values["profile-dir"]), Number(values["profile-requests"]), engine);
} else {
  await bench(engines);
}
await plc?.stop();
await appview.stop();
