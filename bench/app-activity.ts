/**
 * What counting an app's activity costs createRecord (docs/decisions/0053; issue 32 asks for at most 5 % of server
 * CPU): bench/repo-commit.ts's commits (single-record commits by an OAuth app on a repository of 10,000 records, the
 * server's CPU per commit over batches of 200) on two servers of the same build running side by side, one with
 * ATRIUM_APP_ACTIVITY on and one with it off, their batches alternated (on, off, off, on, …) so that a busy shared
 * machine weighs on both alike; the median batch of each. Alone: `npx tsx bench/app-activity.ts [--engine
 * sqlite|postgresql|both] [--batches 8]` after `npm run build`.
 */
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { engineName, forEachEngine, type BenchEngine } from "./lib/engines.ts";
import type { BenchPostgres } from "./lib/postgres.ts";
import { startCommitServer, type CommitServer } from "./repo-commit.ts";
import { median, round } from "./lib/stats.ts";

/**
 * bench/lib/server.ts sets the write budget's bytes to 2^40, past what PostgreSQL's INTEGER counters hold (the budget's
 * spend answers 500 on the first write there): this bench keeps them within, still never refusing its writes.
 */
const WRITE_BYTES_WITHIN_INTEGER = { ATRIUM_WRITE_BYTES_PER_HOUR: String(2 ** 31 - 1), ATRIUM_WRITE_BYTES_PER_DAY: String(2 ** 31 - 1) };

export type ActivityCostResult = { engine: BenchEngine; onMs: number[]; offMs: number[]; onMedian: number; offMedian: number; costPercent: number };

export async function measureActivityCost(engine: BenchEngine, batches: number, postgres?: BenchPostgres): Promise<ActivityCostResult> {
  const servers: Partial<Record<"on" | "off", CommitServer>> = {};
  try {
    for (const mode of ["on", "off"] as const) {
      servers[mode] = await startCommitServer({ postgres, env: { ATRIUM_APP_ACTIVITY: mode === "on" ? "1" : "0", ...WRITE_BYTES_WITHIN_INTEGER } });
    }
    const figures = { on: [] as number[], off: [] as number[] };
    for (let batch = 0; batch < batches; batch++) {
      // Off first in even batches, on first in odd ones: neither always runs on the warmer (or busier) machine.
      const order = batch % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const);
      for (const mode of order) figures[mode].push((await servers[mode]!.commitBatch()).server);
    }
    const onMedian = median([...figures.on].sort((a, b) => a - b));
    const offMedian = median([...figures.off].sort((a, b) => a - b));
    return {
      engine,
      onMs: figures.on.map((ms) => round(ms, 2)),
      offMs: figures.off.map((ms) => round(ms, 2)),
      onMedian: round(onMedian, 2),
      offMedian: round(offMedian, 2),
      costPercent: round(((onMedian - offMedian) / offMedian) * 100, 1),
    };
  } finally {
    await Promise.all(Object.values(servers).map((server) => server.stop()));
  }
}

export function describeActivityCost(result: ActivityCostResult): string {
  return (
    `createRecord's server CPU per commit with app activity counted ${result.onMedian.toFixed(2)} ms (batches ${result.onMs.join(", ")}), ` +
    `not counted ${result.offMedian.toFixed(2)} ms (batches ${result.offMs.join(", ")}): ${result.costPercent >= 0 ? "+" : ""}${result.costPercent} % (issue 32's bound: 5 %)`
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { engine: { type: "string", default: "both" }, batches: { type: "string", default: "8" } } });
  const batches = Number(values.batches);
  await forEachEngine(values.engine, async (engine, postgres) => console.log(`${engineName(engine)}: ${describeActivityCost(await measureActivityCost(engine, batches, postgres))}`), { plc: true });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
