import type { BenchCase, Prepared } from "./cases.ts";
import type { Driver } from "./driver.ts";
import { BATCH_SECONDS, runSequential, timedRequest, type Counters } from "./measure.ts";
import { median, round } from "./stats.ts";

/**
 * Two cases' server CPU against each other, as the configurations are compared (configurations.ts): each case on a
 * server of its own, both running at once; after each server's warm-up, every batch sends the two cases' requests in
 * turn, request by request, so that whatever else the machine does meanwhile lands on both alike, and each server's
 * CPU is read around the batch. The ratio is taken per batch (the second case's CPU per request over the first's) and
 * its median over the batches is reported. Used for the proxy's own cost against getSession (docs/decisions/0048).
 */

export type PairedContender = { name: string; driver: Driver; benchCase: BenchCase };

export type PairedResult = {
  batches: number;
  requestsPerBatch: number;
  cases: { name: string; serverCpuMicrosPerRequest: number; batchServerCpuMicros: number[] }[];
  /** Median over the batches of the second case's server CPU per request over the first's. */
  ratio: number;
};

const PAIRED_BATCHES = 10;

export async function comparePairedCases(pair: [PairedContender, PairedContender], options: { ticksPerSecond: number }): Promise<PairedResult> {
  const micros = (ticks: number) => (ticks * 1e6) / options.ticksPerSecond;
  for (const { driver, benchCase } of pair) await runSequential(driver, benchCase, options.ticksPerSecond);
  const perBatch = Math.ceil(pair[0].benchCase.iterations / 5);
  const cpu: number[][] = [[], []];
  for (let batch = 0; batch < PAIRED_BATCHES; batch++) {
    const items: Prepared[][] = [];
    for (const { benchCase } of pair) items.push(await benchCase.prepare(perBatch));
    const counters: Counters[] = [
      { requests: 0, retries: 0 },
      { requests: 0, retries: 0 },
    ];
    const before = pair.map((c) => c.driver.server.cpuTicks());
    const deadline = performance.now() + 2 * BATCH_SECONDS * 1000;
    for (let i = 0; i < perBatch && performance.now() < deadline; i++) {
      for (const [index, { driver, benchCase }] of pair.entries()) await timedRequest(driver, benchCase, items[index]![i]!, 0, counters[index]!);
    }
    const after = pair.map((c) => c.driver.server.cpuTicks());
    for (const index of [0, 1]) cpu[index]!.push(micros(after[index]! - before[index]!) / counters[index]!.requests);
  }
  const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
  return {
    batches: PAIRED_BATCHES,
    requestsPerBatch: perBatch,
    cases: pair.map(({ name }, index) => ({
      name,
      serverCpuMicrosPerRequest: round(median(sorted(cpu[index]!)), 1),
      batchServerCpuMicros: cpu[index]!.map((value) => round(value, 1)),
    })),
    ratio: round(median(sorted(cpu[1]!.map((value, batch) => value / cpu[0]![batch]!))), 3),
  };
}
