import { startPlcDirectory } from "../../scripts/lib/plc-directory.ts";
import { startBenchPostgres, type BenchPostgres } from "./postgres.ts";

export type BenchEngine = "sqlite" | "postgresql";

/** The engines a bench's `--engine` option names: sqlite, postgresql or both. */
export function enginesOf(option: string): BenchEngine[] {
  if (option === "both") return ["sqlite", "postgresql"];
  if (option === "sqlite" || option === "postgresql") return [option];
  throw new Error(`--engine must be sqlite, postgresql or both (got ${option})`);
}

/**
 * Runs `measure` on each engine the `--engine` option names, in turn: SQLite as it is, PostgreSQL on a bench cluster
 * (bench/lib/postgres.ts) started for it and stopped after, whatever `measure` throws. `plc`: the servers resolve
 * DIDs, so the PLC directory is started first and stopped last, unless ATRIUM_PLC_DIRECTORY_URL already names one.
 */
export async function forEachEngine(option: string, measure: (engine: BenchEngine, postgres: BenchPostgres | undefined) => Promise<void>, options: { plc: boolean }): Promise<void> {
  const engines = enginesOf(option);
  const plc = options.plc && !process.env.ATRIUM_PLC_DIRECTORY_URL ? await startPlcDirectory() : undefined;
  if (plc) process.env.ATRIUM_PLC_DIRECTORY_URL = plc.url;
  try {
    for (const engine of engines) {
      if (engine === "sqlite") {
        await measure(engine, undefined);
        continue;
      }
      const postgres = await startBenchPostgres();
      try {
        await measure(engine, postgres);
      } finally {
        await postgres.stop();
      }
    }
  } finally {
    await plc?.stop();
  }
}

/** How a result names its engine. */
export function engineName(engine: BenchEngine): string {
  return engine === "sqlite" ? "SQLite" : "PostgreSQL";
}
