import type { BenchCase, Prepared } from "./cases.ts";
import type { Driver } from "./driver.ts";
import type { HttpFloorServer } from "./http-floor.ts";
import { BATCH_SECONDS, runSequential, timedRequest, type Counters } from "./measure.ts";
import { processCpuNanos } from "./cpu.ts";
import { statementDelta, stepStatements, type StatementCounts } from "./postgres.ts";
import { median, round } from "./stats.ts";

/**
 * Several processes' CPU per request, measured side by side, as the configurations are compared (configurations.ts):
 * each contender is a process of its own (a server sent one case, or the HTTP floor's server), all running at once;
 * after each one's warm-up, every batch sends one request to each contender in turn, round after round, so that
 * whatever else the machine does meanwhile lands on all of them alike, and each process's CPU is read around the
 * batch, to the nanosecond (cpu.ts, processCpuNanos). A ratio of two contenders is taken per batch and its median over the batches is reported: on a machine whose
 * load swings more than the difference being measured, the figures of separate runs cannot be compared, the ratios
 * within one batch can. Used for the speed targets (the HTTP floor against getSession and refresh, PAR and a proxied
 * call against getSession: bench/README.md, "Speed against the HTTP floor").
 */

export type SideBySideContender = {
  name: string;
  /** CPU of the process that serves this contender's requests, nanoseconds (cpu.ts, processCpuNanos). */
  cpuNanos(): number;
  /** Requests sent before anything is measured (the hot path compiled), then discarded. */
  warmUp(): Promise<void>;
  /** Makes `count` requests ready (proofs signed…) outside the measurement; returns the sender of the i-th. */
  prepare(count: number): Promise<(index: number) => Promise<void>>;
  /** Requests sent so far (a retry after a new nonce is a request too). */
  sent(): number;
  /** PostgreSQL with pg_stat_statements: the calls so far of each statement on this contender's database. */
  statements?(): Promise<StatementCounts>;
};

export type SideBySideResult = {
  batches: number;
  /** Rounds per batch: each contender gets this many requests a batch (unless the batch's time ran out). */
  roundsPerBatch: number;
  contenders: {
    name: string;
    serverCpuMicrosPerRequest: number;
    batchServerCpuMicros: number[];
    /** Statements per request over all batches (BEGIN and COMMIT included), and the same less the request limiter's (postgres.ts, stepStatements). */
    statementsPerRequest?: number;
    stepStatementsPerRequest?: number;
  }[];
};

/** One case on its own server, through the driver (warm-up: the sequential run's, discarded). */
export function caseContender(
  name: string,
  driver: Driver,
  benchCase: BenchCase,
  ticksPerSecond: number,
  statements?: () => Promise<StatementCounts>,
): SideBySideContender {
  const counters: Counters = { requests: 0, retries: 0 };
  return {
    name,
    cpuNanos: () => processCpuNanos(driver.server.pid, ticksPerSecond),
    warmUp: async () => void (await runSequential(driver, benchCase, ticksPerSecond)),
    async prepare(count) {
      const items: Prepared[] = await benchCase.prepare(count);
      return (index) => timedRequest(driver, benchCase, items[index]!, 0, counters).then(() => undefined);
    },
    sent: () => counters.requests,
    statements,
  };
}

/** The HTTP floor's server (http-floor.ts): the same request every time, nothing to prepare. */
export function floorContender(floor: HttpFloorServer, ticksPerSecond: number, warmup = 2000): SideBySideContender {
  let sent = 0;
  const call = async () => {
    await floor.call();
    sent++;
  };
  return {
    name: "http-floor",
    cpuNanos: () => processCpuNanos(floor.pid, ticksPerSecond),
    async warmUp() {
      for (let i = 0; i < warmup; i++) await call();
    },
    prepare: async () => call,
    sent: () => sent,
  };
}

export async function compareSideBySide(
  contenders: SideBySideContender[],
  options: { batches: number; roundsPerBatch: number },
): Promise<SideBySideResult> {
  for (const contender of contenders) await contender.warmUp();
  const cpu: number[][] = contenders.map(() => []);
  const statements = contenders.map(() => ({ total: 0, steps: 0, requests: 0 }));
  for (let batch = 0; batch < options.batches; batch++) {
    const senders = [];
    for (const contender of contenders) senders.push(await contender.prepare(options.roundsPerBatch));
    // One at a time: they share the benchmark's one connection to the cluster.
    const statementsBefore = [];
    for (const contender of contenders) statementsBefore.push(await contender.statements?.());
    const sentBefore = contenders.map((c) => c.sent());
    const before = contenders.map((c) => c.cpuNanos());
    // Each contender gets the sequential run's time for a batch: on a busy machine, PostgreSQL's commits waiting for a
    // shared disk would otherwise stretch a batch without bound.
    const deadline = performance.now() + contenders.length * BATCH_SECONDS * 1000;
    for (let round = 0; round < options.roundsPerBatch && performance.now() < deadline; round++) {
      for (const send of senders) await send(round);
    }
    const after = contenders.map((c) => c.cpuNanos());
    for (const index of contenders.keys()) cpu[index]!.push((after[index]! - before[index]!) / 1000 / (contenders[index]!.sent() - sentBefore[index]!));
    // Read after the CPU, so that the reading's own statements (on another database) land outside the batch.
    for (const [index, contender] of contenders.entries()) {
      if (!contender.statements || !statementsBefore[index]) continue;
      const delta = statementDelta(statementsBefore[index], await contender.statements());
      statements[index]!.total += delta.total;
      statements[index]!.steps += stepStatements(delta.byQuery);
      statements[index]!.requests += contender.sent() - sentBefore[index]!;
    }
  }
  const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
  return {
    batches: options.batches,
    roundsPerBatch: options.roundsPerBatch,
    contenders: contenders.map(({ name }, index) => ({
      name,
      serverCpuMicrosPerRequest: round(median(sorted(cpu[index]!)), 1),
      batchServerCpuMicros: cpu[index]!.map((value) => round(value, 1)),
      ...(statements[index]!.requests > 0
        ? { statementsPerRequest: round(statements[index]!.total / statements[index]!.requests, 2), stepStatementsPerRequest: round(statements[index]!.steps / statements[index]!.requests, 2) }
        : {}),
    })),
  };
}

/** The median over the batches of one contender's CPU per request over another's; undefined when either is missing. */
export function sideBySideRatio(result: SideBySideResult, numerator: string, denominator: string): number | undefined {
  const top = result.contenders.find((c) => c.name === numerator);
  const bottom = result.contenders.find((c) => c.name === denominator);
  if (!top || !bottom) return undefined;
  const ratios = top.batchServerCpuMicros.map((value, batch) => value / bottom.batchServerCpuMicros[batch]!);
  return round(median(ratios.sort((a, b) => a - b)), 3);
}
