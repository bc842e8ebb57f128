import { spawn } from "node:child_process";
import path from "node:path";
import { parseArgs } from "node:util";
import { createDpopProof, generateDpopKey } from "../scripts/lib/dpop-client.ts";
import { clockTicksPerSecond, processCpuTicks } from "./lib/cpu.ts";
import { measureFloor } from "./lib/floor.ts";
import { median } from "./lib/stats.ts";

/**
 * npm run bench:http-floor [-- --requests 1000]: what HTTP alone adds to the floor, on this machine. The floor (the
 * benchmark's SQLite floor, bench/lib/floor.ts) is measured in this process, then the same work is done per request
 * by a plain node:http server (bench/lib/http-floor-server.ts), called one request at a time over loopback with
 * headers the size of a DPoP-authenticated call's (an access token and a real proof), through the same fetch as the
 * benchmark's client. Its CPU per request (from /proc, median of 5 batches after 2,000 requests of warm-up) over the
 * floor is the multiple that Node's HTTP server, the loopback socket and the event loop cost before any of Atrium's
 * own work: read the benchmark's getSession and refresh multiples against it (bench/README.md).
 */

const { values } = parseArgs({ options: { requests: { type: "string", default: "1000" }, rounds: { type: "string", default: "3" } } });
const REQUESTS_PER_BATCH = Number(values.requests);
const ROUNDS = Number(values.rounds);
const BATCHES = 5;
const WARMUP = 2000;

type Started = { pid: number; url: string; stop(): Promise<void> };

async function startFloorServer(): Promise<Started> {
  const script = path.join(import.meta.dirname, "lib", "http-floor-server.ts");
  const child = spawn(process.execPath, ["--import", "tsx", script], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const line = output.split("\n").find((candidate) => candidate.startsWith("{"));
      if (line) resolve((JSON.parse(line) as { port: number }).port);
    });
    void exited.then(() => reject(new Error(`the HTTP floor's server exited before listening: ${output}`)));
  });
  return {
    pid: child.pid!,
    url: `http://127.0.0.1:${port}/xrpc/com.atproto.server.getSession`,
    async stop() {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** One round: the server's CPU per request, µs, the median of BATCHES batches. */
async function measureHttpFloor(ticksPerSecond: number): Promise<number> {
  const server = await startFloorServer();
  try {
    const key = await generateDpopKey();
    const accessToken = `tok-${"A".repeat(43)}`;
    const headers = { Authorization: `DPoP ${accessToken}`, DPoP: await createDpopProof(key, { method: "GET", url: server.url, nonce: "f0Qb6ZcEAt0uXc1r8ObbZp7NmNEd0XH7M9zzhSkzB1k", accessToken }) };
    const call = async () => {
      const response = await fetch(server.url, { headers });
      if (response.status !== 200) throw new Error(`the HTTP floor's server answered ${response.status}`);
      await response.text();
    };
    for (let i = 0; i < WARMUP; i++) await call();
    const perBatch: number[] = [];
    for (let batch = 0; batch < BATCHES; batch++) {
      const before = processCpuTicks(server.pid);
      for (let i = 0; i < REQUESTS_PER_BATCH; i++) await call();
      perBatch.push(((processCpuTicks(server.pid) - before) * 1e6) / ticksPerSecond / REQUESTS_PER_BATCH);
    }
    console.log(`  HTTP floor, server CPU µs/request per batch: ${perBatch.map((micros) => micros.toFixed(0)).join(", ")}`);
    return median([...perBatch].sort((a, b) => a - b));
  } finally {
    await server.stop();
  }
}

const ticksPerSecond = clockTicksPerSecond();
for (let round = 1; round <= ROUNDS; round++) {
  const floor = measureFloor(5000).cpuMicros;
  const http = await measureHttpFloor(ticksPerSecond);
  console.log(`round ${round}: floor ${floor.toFixed(1)} µs; HTTP floor ${http.toFixed(1)} µs = ${(http / floor).toFixed(2)}× the floor`);
}
