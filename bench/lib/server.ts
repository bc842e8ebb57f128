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

export async function startServer(options: { nodeFlags?: string[]; databaseUrl?: string; workers?: number; env?: Record<string, string> } = {}): Promise<BenchServer> {
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
      // Request logs off, as in every earlier run, unless the environment asks (ATRIUM_LOG_REQUESTS=1 npm run bench);
      // ATRIUM_METRICS_PORT, when set, passes through the same way.
      ATRIUM_LOG_REQUESTS: process.env.ATRIUM_LOG_REQUESTS ?? "0",
      // The limiter still runs on every request (its cost is part of what is measured); it just never refuses.
      ATRIUM_RATE_LIMIT_PAR_PER_MINUTE: "1000000",
      ATRIUM_RATE_LIMIT_TOKEN_PER_MINUTE: "1000000",
      ATRIUM_RATE_LIMIT_XRPC_PER_MINUTE: "10000000",
      ATRIUM_RATE_LIMIT_SCREEN_PER_MINUTE: "1000000",
      // The PAR case leaves thousands of requests waiting from one address: counted on every push, never refused.
      ATRIUM_PAR_PENDING_PER_ADDRESS: "1000000",
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
