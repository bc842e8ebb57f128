/**
 * What counting an app's activity costs createRecord (docs/decisions/0053; issue 32 asks for at most 5 % of server
 * CPU): bench/repo-commit.ts's measure (single-record commits by an OAuth app on a repository of 10,000 records, server
 * CPU per commit, median of five batches of 200) on the same build with ATRIUM_APP_ACTIVITY on and off, alternated
 * `--rounds` times so that a busy machine weighs on both alike. Alone: `npx tsx bench/app-activity.ts [--engine
 * sqlite|postgresql|both] [--rounds 2]` after `npm run build`.
 */
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { startPlcDirectory } from "../scripts/lib/plc-directory.ts";
import { startBenchPostgres, type BenchPostgres } from "./lib/postgres.ts";
import { serverCommits } from "./repo-commit.ts";
import { median, round } from "./lib/stats.ts";

/**
 * bench/lib/server.ts sets the write budget's bytes to 2^40, past what PostgreSQL's INTEGER counters hold (the budget's
 * spend answers 500 on the first write there): this bench keeps them within, still never refusing its writes.
 */
const WRITE_BYTES_WITHIN_INTEGER = { ATRIUM_WRITE_BYTES_PER_HOUR: String(2 ** 31 - 1), ATRIUM_WRITE_BYTES_PER_DAY: String(2 ** 31 - 1) };

export type ActivityCostResult = { engine: string; onMs: number[]; offMs: number[]; onMedian: number; offMedian: number; costPercent: number };

export async function measureActivityCost(rounds: number, postgres?: BenchPostgres): Promise<ActivityCostResult> {
  const onMs: number[] = [];
  const offMs: number[] = [];
  for (let round = 0; round < rounds; round++) {
    // Off first in even rounds, on first in odd ones: neither always runs on the warmer (or busier) machine.
    const order = round % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const);
    for (const mode of order) {
      const figures = await serverCommits({ postgres, env: { ATRIUM_APP_ACTIVITY: mode === "on" ? "1" : "0", ...WRITE_BYTES_WITHIN_INTEGER } });
      (mode === "on" ? onMs : offMs).push(figures.serverCpuMs);
    }
  }
  const onMedian = median([...onMs].sort((a, b) => a - b));
  const offMedian = median([...offMs].sort((a, b) => a - b));
  return {
    engine: postgres ? "postgresql" : "sqlite",
    onMs: onMs.map((ms) => round(ms, 2)),
    offMs: offMs.map((ms) => round(ms, 2)),
    onMedian: round(onMedian, 2),
    offMedian: round(offMedian, 2),
    costPercent: round(((onMedian - offMedian) / offMedian) * 100, 1),
  };
}

export function describeActivityCost(result: ActivityCostResult): string {
  return (
    `createRecord's server CPU per commit with app activity counted ${result.onMedian.toFixed(2)} ms (rounds ${result.onMs.join(", ")}), ` +
    `not counted ${result.offMedian.toFixed(2)} ms (rounds ${result.offMs.join(", ")}): ${result.costPercent >= 0 ? "+" : ""}${result.costPercent} % (issue 32's bound: 5 %)`
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { engine: { type: "string", default: "both" }, rounds: { type: "string", default: "2" } } });
  const engines = values.engine === "both" ? ["sqlite", "postgresql"] : [values.engine];
  const rounds = Number(values.rounds);
  const plc = process.env.ATRIUM_PLC_DIRECTORY_URL ? undefined : await startPlcDirectory();
  if (plc) process.env.ATRIUM_PLC_DIRECTORY_URL = plc.url;
  try {
    for (const engine of engines) {
      if (engine === "sqlite") console.log(`SQLite: ${describeActivityCost(await measureActivityCost(rounds))}`);
      else if (engine === "postgresql") {
        const postgres = await startBenchPostgres();
        try {
          console.log(`PostgreSQL: ${describeActivityCost(await measureActivityCost(rounds, postgres))}`);
        } finally {
          await postgres.stop();
        }
      } else throw new Error(`--engine must be sqlite, postgresql or both (got ${engine})`);
    }
  } finally {
    await plc?.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
