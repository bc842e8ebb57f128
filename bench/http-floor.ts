import { parseArgs } from "node:util";
import { clockTicksPerSecond } from "./lib/cpu.ts";
import { measureFloor } from "./lib/floor.ts";
import { startHttpFloorServer } from "./lib/http-floor.ts";
import { median } from "./lib/stats.ts";

/**
 * npm run bench:http-floor [-- --requests 1000]: what HTTP alone adds to the floor, on this machine. The floor (the
 * benchmark's SQLite floor, bench/lib/floor.ts) is measured in this process, then the same work is done per request
 * by a plain node:http server (bench/lib/http-floor.ts), called one request at a time over loopback with headers the
 * size of a DPoP-authenticated call's (an access token and a real proof), through the same fetch as the benchmark's
 * client. Its CPU per request (from /proc, median of 5 batches after 2,000 requests of warm-up) over the floor is the
 * multiple that Node's HTTP server, the loopback socket and the event loop cost before any of Atrium's own work.
 * `npm run bench` measures the same server side by side with getSession, refresh and PAR, and states its targets
 * against it (bench/README.md).
 */

const { values } = parseArgs({ options: { requests: { type: "string", default: "1000" }, rounds: { type: "string", default: "3" } } });
const REQUESTS_PER_BATCH = Number(values.requests);
const ROUNDS = Number(values.rounds);
const BATCHES = 5;
const WARMUP = 2000;

/** One round: the server's CPU per request, µs, the median of BATCHES batches. */
async function measureHttpFloor(ticksPerSecond: number): Promise<number> {
  const server = await startHttpFloorServer();
  try {
    for (let i = 0; i < WARMUP; i++) await server.call();
    const perBatch: number[] = [];
    for (let batch = 0; batch < BATCHES; batch++) {
      const before = server.cpuTicks();
      for (let i = 0; i < REQUESTS_PER_BATCH; i++) await server.call();
      perBatch.push(((server.cpuTicks() - before) * 1e6) / ticksPerSecond / REQUESTS_PER_BATCH);
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
