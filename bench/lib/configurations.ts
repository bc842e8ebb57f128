import type { BenchCase, Prepared } from "./cases.ts";
import type { Driver } from "./driver.ts";
import { BATCH_SECONDS, runSequential, timedRequest, type Counters } from "./measure.ts";
import type { Configuration } from "./server.ts";
import { median, round } from "./stats.ts";

/**
 * The production defaults against the bare server (docs/decisions/0035): one
 * server per configuration, all running at once on databases of their own.
 * After a warm-up of each, every batch sends the case's requests to the
 * servers in turn, request by request (bare, defaults, bare, defaults, …), so
 * that whatever else the machine does meanwhile lands on each alike; each
 * server's CPU is read around the batch. The overhead is taken per batch (a
 * configuration's CPU per request over the bare server's in the same batch)
 * and its median over the batches is reported, with each configuration's
 * median CPU per request.
 */

export type ConfigurationResult = {
  configuration: Configuration;
  /** Median batch, µs. */
  serverCpuMicrosPerRequest: number;
  medianMs: number;
  batchServerCpuMicros: number[];
  /** Median over the batches of this configuration's server CPU per request over the bare server's, less one (0.08: 8 % more); undefined for bare. */
  overhead?: number;
};

export type ComparisonRow = { name: string; batches: number; requestsPerBatch: number; configurations: ConfigurationResult[] };

export type Contender = { configuration: Configuration; driver: Driver; accessToken: string };

export type CaseMaker = { name: string; make: (driver: Driver, accessToken: string) => Promise<BenchCase> | BenchCase };

/** Batches per case (more than the sequential run's: the figure is a ratio of two noisy ones). */
const COMPARISON_BATCHES = 10;

export async function compareConfigurations(
  contenders: Contender[],
  cases: CaseMaker[],
  options: { ticksPerSecond: number; log: (line: string) => void },
): Promise<ComparisonRow[]> {
  const micros = (ticks: number) => (ticks * 1e6) / options.ticksPerSecond;
  const rows: ComparisonRow[] = [];
  for (const { name, make } of cases) {
    const benchCases = await Promise.all(contenders.map((c) => make(c.driver, c.accessToken)));
    // Each server's warm-up (and a first reading, discarded): the hot path compiled before anything counts.
    for (const [index, contender] of contenders.entries()) await runSequential(contender.driver, benchCases[index]!, options.ticksPerSecond);

    const perBatch = Math.ceil(benchCases[0]!.iterations / 5);
    const cpu: number[][] = contenders.map(() => []);
    const latencies: number[][] = contenders.map(() => []);
    for (let batch = 0; batch < COMPARISON_BATCHES; batch++) {
      const items: Prepared[][] = [];
      for (const benchCase of benchCases) items.push(await benchCase.prepare(perBatch));
      const counters: Counters[] = contenders.map(() => ({ requests: 0, retries: 0 }));
      const before = contenders.map((c) => c.driver.server.cpuTicks());
      // Two servers take turns, so the batch may last twice the sequential run's.
      const deadline = performance.now() + 2 * BATCH_SECONDS * 1000;
      for (let i = 0; i < perBatch && performance.now() < deadline; i++) {
        for (const [index, contender] of contenders.entries()) {
          latencies[index]!.push(await timedRequest(contender.driver, benchCases[index]!, items[index]![i]!, 0, counters[index]!));
        }
      }
      const after = contenders.map((c) => c.driver.server.cpuTicks());
      for (const index of contenders.keys()) cpu[index]!.push(micros(after[index]! - before[index]!) / counters[index]!.requests);
    }

    const bareIndex = contenders.findIndex((c) => c.configuration === "bare");
    const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
    const configurations = contenders.map(({ configuration }, index): ConfigurationResult => {
      const result: ConfigurationResult = {
        configuration,
        serverCpuMicrosPerRequest: round(median(sorted(cpu[index]!)), 1),
        medianMs: round(median(sorted(latencies[index]!)), 3),
        batchServerCpuMicros: cpu[index]!.map((value) => round(value, 1)),
      };
      if (bareIndex !== -1 && index !== bareIndex) {
        result.overhead = round(median(sorted(cpu[index]!.map((value, batch) => value / cpu[bareIndex]![batch]! - 1))), 3);
      }
      return result;
    });
    options.log(
      `  ${name}: server µs/req ` +
        configurations
          .map((c) => `${c.configuration} ${c.serverCpuMicrosPerRequest.toFixed(0)}${c.overhead === undefined ? "" : ` (${c.overhead >= 0 ? "+" : ""}${(c.overhead * 100).toFixed(1)} %)`}`)
          .join(", ") +
        `; per batch: ${configurations.map((c) => `${c.configuration} ${c.batchServerCpuMicros.map((v) => v.toFixed(0)).join("/")}`).join("; ")}`,
    );
    rows.push({ name, batches: COMPARISON_BATCHES, requestsPerBatch: perBatch, configurations });
  }
  return rows;
}
