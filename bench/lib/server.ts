import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createAccountOn, freePort, spawnServer } from "../../scripts/lib/server-process.ts";

/**
 * Starts the built server as a child process (exactly as in production:
 * `node --import tsx server.ts`) on a free loopback port with a fresh SQLite
 * file in a temporary folder, and stops it with SIGTERM.
 */

export type BenchServer = {
  issuer: string;
  pid: number;
  databasePath: string;
  output(): string;
  stop(): Promise<void>;
};

export async function startServer(options: { nodeFlags?: string[] } = {}): Promise<BenchServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-bench-"));
  const databasePath = path.join(dir, "atrium.db");
  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  const server = await spawnServer({
    port: await freePort(),
    databaseUrl: `file:${databasePath}`,
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
    },
  }).catch((error: unknown) => {
    cleanup();
    throw error;
  });
  return {
    issuer: server.issuer,
    pid: server.child.pid!,
    databasePath,
    output: server.output,
    async stop() {
      await server.stop();
      cleanup();
    },
  };
}

/** Creates an account through the real command line tool, on the server's database file. */
export function createAccount(server: BenchServer, account: { handle: string; email: string; password: string }) {
  return createAccountOn(`file:${server.databasePath}`, account);
}
