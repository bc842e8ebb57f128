import type { CaseMaker } from "./configurations.ts";
import type { Driver } from "./driver.ts";
import type { StatementCounts } from "./postgres.ts";
import { startHttpFloorServer } from "./http-floor.ts";
import { caseContender, compareSideBySide, floorContender, sideBySideRatio, type SideBySideContender, type SideBySideResult } from "./side-by-side.ts";

/**
 * The speed targets of issue 28 (bench/README.md, "Speed against the HTTP floor"), measured side by side
 * (side-by-side.ts): the HTTP floor's server of the engine (http-floor.ts) and one bare Atrium server per case, each
 * sent one request a round in turn. Each target is a ratio of two of them, the median over the batches.
 */

/** The cases measured beside the HTTP floor, in the order a round sends them. */
export const SPEED_CASES = ["getSession", "refresh", "par", "proxy"] as const;

/** Each target: the CPU per request of `of` over that of `to`, measured side by side, at most `limit`. */
export const SPEED_TARGETS = [
  { of: "getSession", to: "http-floor", limit: 1.6, description: "server CPU ≤ 1.6× the HTTP floor, side by side" },
  { of: "refresh", to: "http-floor", limit: 2.4, description: "server CPU ≤ 2.4× the HTTP floor, side by side" },
  { of: "par", to: "getSession", limit: 1.2, description: "server CPU ≤ 1.2× getSession, side by side" },
  // Issue 29 (docs/decisions/0048): a proxied call to an app view that answers at once.
  { of: "proxy", to: "getSession", limit: 1.5, description: "server CPU ≤ 1.5× getSession, side by side" },
] as const;

export type SpeedReport = SideBySideResult & { ratios: { of: string; to: string; ratio: number }[] };

const BATCHES = 10;
/** Each contender's requests per batch; their CPU is read to the nanosecond, so a few hundred are enough. */
const ROUNDS_PER_BATCH = 300;

export async function measureSpeed(options: {
  /** The cases selected for the run (--cases): those of SPEED_CASES among them are measured; getSession always. */
  cases: CaseMaker[];
  /** Starts a bare server on a database of its own (`name` names it), runs `body`, stops the server. */
  withServer: <T>(name: string, body: (driver: Driver) => Promise<T>) => Promise<T>;
  /** PostgreSQL: a new database for the HTTP floor's server; undefined on SQLite. */
  floorDatabase?: () => Promise<string>;
  /** PostgreSQL with pg_stat_statements: the statements so far on the database of the server `name` names. */
  statements?: (name: string) => Promise<StatementCounts>;
  ticksPerSecond: number;
  log: (line: string) => void;
}): Promise<SpeedReport> {
  const makers = SPEED_CASES.map((name) => options.cases.find((c) => c.name === name)).filter((maker): maker is CaseMaker => maker !== undefined);
  const floor = await startHttpFloorServer({ databaseUrl: await options.floorDatabase?.() });
  try {
    const contenders: SideBySideContender[] = [floorContender(floor, options.ticksPerSecond)];
    const result = await withServers(makers, options.withServer, async (drivers) => {
      for (const [index, { name, make }] of makers.entries()) {
        const driver = drivers[index]!;
        const statements = options.statements;
        const meter = statements ? () => statements(name) : undefined;
        contenders.push(caseContender(name, driver, await make(driver, (await driver.obtainTokens()).access_token), options.ticksPerSecond, meter));
      }
      return compareSideBySide(contenders, { batches: BATCHES, roundsPerBatch: ROUNDS_PER_BATCH });
    });
    const ratios = SPEED_TARGETS.flatMap(({ of, to }) => {
      const ratio = sideBySideRatio(result, of, to);
      return ratio === undefined ? [] : [{ of, to, ratio }];
    });
    options.log(
      `  server µs/req (median batch): ${result.contenders.map((c) => `${c.name} ${c.serverCpuMicrosPerRequest.toFixed(0)}`).join(", ")}; ` +
        `${ratios.map((r) => `${r.of} ÷ ${r.to} ${r.ratio.toFixed(2)}`).join(", ")}\n` +
        `${result.contenders.some((c) => c.stepStatementsPerRequest !== undefined) ? `  PostgreSQL statements per request, the limiter's left out: ${result.contenders.filter((c) => c.stepStatementsPerRequest !== undefined).map((c) => `${c.name} ${c.stepStatementsPerRequest!.toFixed(2)}`).join(", ")}\n` : ""}` +
        `  per batch: ${result.contenders.map((c) => `${c.name} ${c.batchServerCpuMicros.map((v) => v.toFixed(0)).join("/")}`).join("; ")}`,
    );
    return { ...result, ratios };
  } finally {
    await floor.stop();
  }
}

/** One server per case, all running at once; stopped afterwards. */
async function withServers<T>(
  makers: CaseMaker[],
  withServer: <R>(name: string, body: (driver: Driver) => Promise<R>) => Promise<R>,
  run: (drivers: Driver[]) => Promise<T>,
  started: Driver[] = [],
): Promise<T> {
  const [first, ...rest] = makers;
  if (first === undefined) return run(started);
  return withServer(first.name, (driver) => withServers(rest, withServer, run, [...started, driver]));
}
