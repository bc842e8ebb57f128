import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { freePort, spawnServer } from "../scripts/lib/server-process.ts";

/**
 * npm run bench:start-up [-- --runs 9]: how long the built server takes from its spawn to its readiness line
 * (`{"event":"listening"}`), and its resident memory (VmRSS) right after, each on a fresh SQLite file, started exactly
 * as production starts it (scripts/lib/server-process.ts). Prints every run and the medians.
 */

type Run = { startMs: number; rssMiB: number };

function residentMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((candidate) => candidate.startsWith("VmRSS:"));
  if (!line) throw new Error(`no VmRSS for process ${pid}`);
  return Number(/(\d+)/.exec(line)![1]) / 1024;
}

async function oneRun(): Promise<Run> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-start-up-"));
  try {
    const port = await freePort();
    const started = performance.now();
    const server = await spawnServer({ port, databaseUrl: `file:${path.join(dir, "atrium.db")}`, env: { ATRIUM_LOG_REQUESTS: "0" } });
    const startMs = performance.now() - started;
    const rssMiB = residentMiB(server.child.pid!);
    await server.stop();
    return { startMs, rssMiB };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const { values } = parseArgs({ options: { runs: { type: "string", default: "9" } } });
const runs: Run[] = [];
for (let i = 0; i < Number(values.runs); i++) {
  const run = await oneRun();
  runs.push(run);
  console.log(`run ${i + 1}: listening after ${run.startMs.toFixed(0)} ms, ${run.rssMiB.toFixed(1)} MiB resident`);
}
console.log(`median of ${runs.length}: listening after ${median(runs.map((run) => run.startMs)).toFixed(0)} ms, ${median(runs.map((run) => run.rssMiB)).toFixed(1)} MiB resident`);
