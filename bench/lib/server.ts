import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createAccountOn, freePort, spawnServer } from "../../scripts/lib/server-process.ts";
import { childTreeCpuTicks, processTreeCpuTicks } from "./cpu.ts";

/**
 * Starts the built server as a child process (exactly as in production:
 * `node build/server/server.js`) on a free loopback port, and stops it with
 * SIGTERM. On SQLite with a fresh file in a temporary folder; on PostgreSQL on
 * the database `databaseUrl` names (the server migrates it as it starts).
 * `workers` > 1 runs that many server processes (ATRIUM_WORKERS) under a
 * primary; the server's CPU is then that of the primary and all its workers.
 */

export type BenchServer = {
  issuer: string;
  /** The process started: the server, or with workers the primary. */
  pid: number;
  workers: number;
  databaseUrl: string;
  /** CPU of the server process, or the primary and all its workers, clock ticks. */
  cpuTicks(): number;
  /** CPU of each worker (by PID) when there are several, clock ticks. */
  workerCpuTicks(): Map<number, number>;
  output(): string;
  stop(): Promise<void>;
};

/**
 * What the server runs with besides its database (docs/decisions/0035):
 * - `bare`: request log lines and metrics off, as every run before 2026-11-26 measured;
 * - `defaults`: what `NODE_ENV=production` turns on by itself: the request log (one line per request on standard
 *   output, which the benchmark reads through a pipe as a supervisor would); metrics stay off, as they need a port;
 * - `metrics`: the defaults plus metrics on a port of their own (ATRIUM_METRICS_PORT), as most deployments run.
 */
export type Configuration = "bare" | "defaults" | "metrics";
export const CONFIGURATIONS: readonly Configuration[] = ["bare", "defaults", "metrics"];

async function configurationEnv(configuration: Configuration): Promise<Record<string, string>> {
  // An empty value is unset for the server's configuration: the production default decides.
  if (configuration === "bare") return { ATRIUM_LOG_REQUESTS: "0", ATRIUM_METRICS_PORT: "" };
  if (configuration === "defaults") return { ATRIUM_LOG_REQUESTS: "", ATRIUM_METRICS_PORT: "" };
  return { ATRIUM_LOG_REQUESTS: "", ATRIUM_METRICS_PORT: String(await freePort()) };
}

export async function startServer(
  options: { nodeFlags?: string[]; databaseUrl?: string; workers?: number; configuration?: Configuration; env?: Record<string, string> } = {},
): Promise<BenchServer> {
  let cleanup = () => {};
  let databaseUrl = options.databaseUrl;
  if (!databaseUrl) {
    const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-bench-"));
    cleanup = () => rmSync(dir, { recursive: true, force: true });
    databaseUrl = `file:${path.join(dir, "atrium.db")}`;
  }
  const workers = options.workers ?? 1;
  const server = await spawnServer({
    port: await freePort(),
    databaseUrl,
    nodeFlags: options.nodeFlags,
    env: {
      // Request logs and metrics as the configuration says (bare unless told otherwise).
      ...(await configurationEnv(options.configuration ?? "bare")),
      // The limiter still runs on every request (its cost is part of what is measured); it just never refuses.
      ATRIUM_RATE_LIMIT_PAR_PER_MINUTE: "1000000",
      ATRIUM_RATE_LIMIT_TOKEN_PER_MINUTE: "1000000",
      ATRIUM_RATE_LIMIT_XRPC_PER_MINUTE: "10000000",
      ATRIUM_RATE_LIMIT_SCREEN_PER_MINUTE: "1000000",
      // The PAR case leaves thousands of requests waiting from one address: counted on every push, never refused.
      ATRIUM_PAR_PENDING_PER_ADDRESS: "1000000",
      // The repository cases write tens of thousands of records to one account: its write budget is spent on every
      // write, as deployed, and never refuses (docs/decisions/0045).
      ATRIUM_WRITE_POINTS_PER_HOUR: "100000000",
      ATRIUM_WRITE_POINTS_PER_DAY: "100000000",
      ATRIUM_WRITE_BYTES_PER_HOUR: String(2 ** 40),
      ATRIUM_WRITE_BYTES_PER_DAY: String(2 ** 40),
      // Password sessions (docs/decisions/0047): concurrent sign-ins to the one account are all checked.
      ATRIUM_SIGN_IN_FREE_ATTEMPTS: "1000",
      ATRIUM_WORKERS: String(workers),
      ...options.env,
    },
  }).catch((error: unknown) => {
    cleanup();
    throw error;
  });
  const pid = server.child.pid!;
  return {
    issuer: server.issuer,
    pid,
    workers,
    databaseUrl,
    cpuTicks: () => processTreeCpuTicks(pid),
    workerCpuTicks: () => (workers > 1 ? childTreeCpuTicks(pid) : new Map()),
    output: server.output,
    async stop() {
      await server.stop();
      cleanup();
    },
  };
}

/** Creates an account through the real command line tool, on the server's database. */
export function createAccount(server: BenchServer, account: { handle: string; email: string; password: string }) {
  return createAccountOn(server.databaseUrl, account, server.issuer);
}
