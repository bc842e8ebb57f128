import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { createAccountOn, freePort, spawnServer } from "../../scripts/lib/server-process.ts";

export { freePort };

export type TestServer = {
  issuer: string;
  port: number;
  /** The server's process id (to look at its sockets in /proc). */
  pid: number;
  databasePath: string;
  /** Opens the server's SQLite file directly, for assertions on stored state. */
  db(): Database.Database;
  output(): string;
  stop(): Promise<void>;
};

/**
 * Starts the built server (npm test builds first) as a child process on a
 * free loopback port with its own SQLite file, and waits for its
 * "listening" line. `env` overrides the test defaults (e.g. DATABASE_URL to
 * share another server's database).
 */
export async function startTestServer(env: Record<string, string> = {}): Promise<TestServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-test-"));
  const databasePath = env.DATABASE_URL?.replace(/^file:/, "") ?? path.join(dir, "atrium.db");
  const port = await freePort();
  const server = await spawnServer({ port, databasePath, env }).catch((error: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  });

  let handle: Database.Database | undefined;
  return {
    issuer: server.issuer,
    port,
    pid: server.child.pid!,
    databasePath,
    db() {
      handle ??= new Database(databasePath);
      handle.pragma("busy_timeout = 5000");
      return handle;
    },
    output: server.output,
    async stop() {
      handle?.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Creates an account through the real command line tool. */
export async function createAccount(
  server: TestServer,
  account: { handle: string; email: string; password: string; did?: string },
): Promise<{ did: string; handle: string }> {
  return createAccountOn(server.databasePath, account);
}
