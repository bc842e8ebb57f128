import type { BenchCase } from "./cases.ts";
import type { Driver } from "./driver.ts";
import { runSequential, type Meters, type SequentialResult } from "./measure.ts";
import type { Configuration } from "./server.ts";
import { median, round } from "./stats.ts";

/**
 * The production defaults against the bare server (docs/decisions/0035): one
 * server per configuration, all running at once on databases of their own,
 * and each case measured on them in turn, round after round (bare, defaults,
 * bare, defaults, …), so that whatever else the machine does lands on every
 * configuration alike. A configuration's figure is the median of all its
 * batches; the overhead is that over the bare server's, in the same run.
 */

export type ConfigurationResult = {
  configuration: Configuration;
  /** Median batch over every round, µs. */
  serverCpuMicrosPerRequest: number;
  postgresCpuMicrosPerRequest?: number;
  medianMs: number;
  batchServerCpuMicros: number[];
  /** Server CPU per request over the bare server's, less one (0.08: 8 % more); undefined for the bare server itself. */
  overhead?: number;
};

export type ComparisonRow = { name: string; configurations: ConfigurationResult[] };

export type Contender = { configuration: Configuration; driver: Driver; accessToken: string; meters: Meters };

export type CaseMaker = { name: string; make: (driver: Driver, accessToken: string) => Promise<BenchCase> | BenchCase };

export async function compareConfigurations(
  contenders: Contender[],
  cases: CaseMaker[],
  options: { rounds: number; ticksPerSecond: number; log: (line: string) => void },
): Promise<ComparisonRow[]> {
  const rows: ComparisonRow[] = [];
  for (const { name, make } of cases) {
    const benchCases = await Promise.all(contenders.map((c) => make(c.driver, c.accessToken)));
    const results: SequentialResult[][] = contenders.map(() => []);
    for (let roundIndex = 0; roundIndex < options.rounds; roundIndex++) {
      for (const [index, contender] of contenders.entries()) {
        results[index]!.push(await runSequential(contender.driver, benchCases[index]!, options.ticksPerSecond, contender.meters));
      }
    }
    const configurations = contenders.map(({ configuration }, index): ConfigurationResult => {
      const batches = results[index]!.flatMap((r) => r.batches);
      const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
      const postgres = batches.every((b) => b.postgresCpuMicros !== undefined) ? median(sorted(batches.map((b) => b.postgresCpuMicros!))) : undefined;
      return {
        configuration,
        serverCpuMicrosPerRequest: round(median(sorted(batches.map((b) => b.serverCpuMicros))), 1),
        postgresCpuMicrosPerRequest: postgres === undefined ? undefined : round(postgres, 1),
        medianMs: round(median(sorted(results[index]!.map((r) => r.medianMs))), 3),
        batchServerCpuMicros: batches.map((b) => round(b.serverCpuMicros, 1)),
      };
    });
    const bare = configurations.find((c) => c.configuration === "bare");
    for (const c of configurations) {
      if (bare && c !== bare) c.overhead = round(c.serverCpuMicrosPerRequest / bare.serverCpuMicrosPerRequest - 1, 3);
    }
    options.log(
      `  ${name}: server µs/req ` +
        configurations
          .map((c) => `${c.configuration} ${c.serverCpuMicrosPerRequest.toFixed(0)}${c.overhead === undefined ? "" : ` (${c.overhead >= 0 ? "+" : ""}${(c.overhead * 100).toFixed(1)} %)`}`)
          .join(", ") +
        ` over ${options.rounds} rounds of ${results[0]![0]!.batches.length} batches`,
    );
    rows.push({ name, configurations });
  }
  return rows;
}
