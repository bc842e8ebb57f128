import cluster, { type Worker } from "node:cluster";
import type { Server } from "node:http";
import type { Logger as PinoLogger } from "pino";
import { AggregatorRegistry } from "prom-client";
import type { Config } from "../app/.server/config.ts";
import { applyMigrations } from "../app/.server/db/migrations.ts";
import { serveMetrics } from "./metrics.ts";

/**
 * ATRIUM_WORKERS > 1 (docs/decisions/0021): this process becomes the primary
 * of Node's cluster module and forks that many server processes, which share
 * the listening port (the primary hands connections out round-robin). Each
 * worker is a whole server with its own database pool or connection; they
 * agree through the database as separate machines would (nonces from a
 * stored secret, limits, single-use steps). The primary serves no request:
 * it applies the migrations once before forking, replaces a worker that
 * dies, serves the workers' summed metrics, and passes SIGTERM/SIGINT on.
 */

/** What a worker tells the primary once it listens. */
export type WorkerReady = { event: "atrium-worker-listening"; port: number };

export function isWorkerReady(message: unknown): message is WorkerReady {
  return typeof message === "object" && message !== null && (message as WorkerReady).event === "atrium-worker-listening";
}

/** A worker that dies within this long of its start counts as a crash loop: the next one waits longer. */
const QUICK_DEATH_MS = 10_000;
const MAX_RESTART_DELAY_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;

/** `beforeFork`: what must hold before any worker starts (the keys: docs/decisions/0050); a refusal stops the primary. */
export async function runPrimary(config: Config, log: PinoLogger, beforeFork: () => Promise<void>): Promise<void> {
  const { applied } = await applyMigrations(config.database);
  if (applied.length) log.info({ migrations: applied }, "Applied database migrations");
  await beforeFork();
  const metricsServer = config.metrics ? await serveClusterMetrics(config.metrics, log) : undefined;

  let stopping = false;
  let announced = false;
  const startedAt = new Map<Worker, number>();
  const ready = new Set<Worker>();
  let restartDelay = 0;

  const fork = () => {
    const worker = cluster.fork();
    startedAt.set(worker, Date.now());
    worker.on("message", (message: unknown) => {
      if (!isWorkerReady(message)) return;
      ready.add(worker);
      if (!announced && ready.size === config.workers) {
        announced = true;
        // The readiness line supervisors, the tests and the benchmarks wait for: once every worker listens.
        process.stdout.write(`${JSON.stringify({ event: "listening", port: message.port, issuer: config.issuer, workers: config.workers })}\n`);
        log.info({ issuer: config.issuer, port: message.port, workers: config.workers }, `Atrium is serving ${config.issuer} with ${config.workers} worker processes`);
      }
    });
  };

  cluster.on("exit", (worker, code, signal) => {
    ready.delete(worker);
    const lived = Date.now() - (startedAt.get(worker) ?? 0);
    startedAt.delete(worker);
    if (stopping) return;
    // A worker that dies is replaced; one that keeps dying at once is replaced ever more slowly, so a broken
    // deployment does not spin (and its log says why).
    restartDelay = lived < QUICK_DEATH_MS ? Math.min(MAX_RESTART_DELAY_MS, Math.max(1_000, restartDelay * 2)) : 0;
    // Named so that nothing hides them: every line already carries the primary's own `pid`, and the redaction list
    // masks any field called `code` (docs/decisions/0014), which is an OAuth code's name before an exit code's.
    log.error({ workerPid: worker.process.pid, exitCode: code, signal, restartInMs: restartDelay }, "A worker process ended unexpectedly; starting another");
    setTimeout(fork, restartDelay);
  });

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, `${signal} received: stopping the workers`);
    const workers = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined);
    // Each worker finishes its in-flight requests and writes its counts (its own SIGTERM handling, server.ts).
    for (const worker of workers) worker.process.kill("SIGTERM");
    const force = setTimeout(() => {
      for (const worker of workers) if (!worker.isDead()) worker.process.kill("SIGKILL");
    }, STOP_TIMEOUT_MS);
    force.unref();
    const exits = workers.filter((worker) => !worker.isDead()).map((worker) => new Promise<void>((resolve) => worker.once("exit", () => resolve())));
    void Promise.all(exits).then(() => {
      metricsServer?.close();
      process.exit(0);
    });
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));

  for (let i = 0; i < config.workers; i++) fork();
}

/** The workers' metrics, summed by prom-client's cluster aggregation, on the metrics port (the workers serve none). */
function serveClusterMetrics(settings: { host: string; port: number }, log: PinoLogger): Promise<Server> {
  const aggregator = new AggregatorRegistry();
  return serveMetrics(
    async () => ({ text: await aggregator.clusterMetrics(), contentType: aggregator.contentType }),
    settings.host,
    settings.port,
    log,
  );
}
