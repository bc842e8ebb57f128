import type { BenchCase, Prepared } from "./cases.ts";
import { processCpuTicks } from "./cpu.ts";
import type { Driver } from "./driver.ts";
import { median, percentile } from "./stats.ts";

export const CONCURRENCY = 8;
/** The sequential run is measured in this many equal batches; the CPU figure is the median batch's. */
export const BATCHES = 5;
const THROUGHPUT_SECONDS = 5;

export type Counters = { requests: number; retries: number };

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
  serverCpuMicrosPerRequest: number;
  /** Server CPU per request of each batch, in order. */
  batchCpuMicros: number[];
  cpuTicks: number;
  requests: number;
  retries: number;
};

/**
 * Warm-up (V8 compiles the hot path during the first few hundred requests: a
 * one-time cost, not a per-request one), then `iterations` requests one after
 * another in BATCHES batches. Server CPU comes from its /proc counters around
 * each batch's timed loop only; the median batch is reported, so a burst of
 * interference from elsewhere on a shared machine moves one batch, not the figure.
 */
export async function runSequential(driver: Driver, benchCase: BenchCase, ticksPerSecond: number): Promise<SequentialResult> {
  const warmCounters: Counters = { requests: 0, retries: 0 };
  for (const item of await benchCase.prepare(benchCase.warmup)) await timedRequest(driver, benchCase, item, 0, warmCounters);

  const counters: Counters = { requests: 0, retries: 0 };
  const latencies: number[] = [];
  const batchCpuMicros: number[] = [];
  let cpuTicks = 0;
  for (let batch = 0; batch < BATCHES; batch++) {
    const items = await benchCase.prepare(Math.ceil(benchCase.iterations / BATCHES));
    const sentBefore = counters.requests;
    const before = processCpuTicks(driver.server.pid);
    for (const item of items) latencies.push(await timedRequest(driver, benchCase, item, 0, counters));
    const ticks = processCpuTicks(driver.server.pid) - before;
    cpuTicks += ticks;
    batchCpuMicros.push((ticks * 1e6) / ticksPerSecond / (counters.requests - sentBefore));
  }

  latencies.sort((a, b) => a - b);
  return {
    medianMs: median(latencies),
    p99Ms: percentile(latencies, 99),
    serverCpuMicrosPerRequest: median([...batchCpuMicros].sort((a, b) => a - b)),
    batchCpuMicros,
    cpuTicks,
    requests: counters.requests,
    retries: counters.retries,
  };
}

export type ThroughputResult = { rps: number; completed: number; seconds: number; serverCpuMicrosPerRequest: number };

/**
 * CONCURRENCY workers share a pool of prepared requests sized for about
 * THROUGHPUT_SECONDS (from the sequential median), and stop early at that
 * deadline.
 */
export async function runThroughput(driver: Driver, benchCase: BenchCase, sequentialMedianMs: number, ticksPerSecond: number): Promise<ThroughputResult> {
  await benchCase.setupLanes(CONCURRENCY);
  const estimatedRps = (2 * 1000) / Math.max(sequentialMedianMs, 0.05);
  const count = Math.round(Math.min(benchCase.maxThroughputCount, Math.max(200, estimatedRps * (THROUGHPUT_SECONDS - 1))));
  const items = await benchCase.prepare(count);

  const counters: Counters = { requests: 0, retries: 0 };
  let next = 0;
  let completed = 0;
  const before = processCpuTicks(driver.server.pid);
  const started = performance.now();
  const deadline = started + THROUGHPUT_SECONDS * 1000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, lane) => {
      while (next < items.length && performance.now() < deadline) {
        const item = items[next++]!;
        await timedRequest(driver, benchCase, item, lane, counters);
        completed++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpuTicks = processCpuTicks(driver.server.pid) - before;
  return { rps: completed / seconds, completed, seconds, serverCpuMicrosPerRequest: (cpuTicks * 1e6) / ticksPerSecond / counters.requests };
}
