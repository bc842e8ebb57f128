/**
 * A server child process the test controls directly: unlike
 * startTestServer, it exposes the child (for signals such as SIGKILL and
 * SIGTERM and its exit code) and can be started again on the same SQLite
 * file and port, as a real deployment restarts after a crash.
 */
import type { ChildProcess } from "node:child_process";
import Database from "better-sqlite3";
import type { Database as StoreDatabase } from "../../app/.server/db/sql.ts";
import { freePort, spawnServer } from "../../scripts/lib/server-process.ts";
import { createServerDatabase } from "./test-database.ts";
import { offlineDefaultServices } from "./test-server.ts";

export type ProcessServer = {
  issuer: string;
  port: number;
  /** Its DATABASE_URL (SQLite or PostgreSQL, as the Vitest project runs: tests/helpers/test-database.ts). */
  databaseUrl: string;
  /** The SQLite file; undefined on PostgreSQL. */
  databasePath: string | undefined;
  /** The running server process (replaced by restart()). */
  readonly child: ChildProcess;
  /** Its process id. */
  readonly pid: number;
  /** The server's database, whichever the engine (tests/helpers/databases.ts: rowOf, rowsOf, execute). */
  database(): StoreDatabase;
  /** Opens the SQLite file directly (a fresh handle after every restart); throws on PostgreSQL. */
  db(): Database.Database;
  /** Everything every process printed so far. */
  output(): string;
  /** Waits for the output (of every process so far) to match: log lines come in batches (docs/decisions/0035). */
  printed(pattern: RegExp | string): Promise<string>;
  /** Resolves with the exit code (or the signal) of the current process. */
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends a signal to the current process. */
  signal(signal: NodeJS.Signals): void;
  /** Starts a new process on the same database file and port (the previous one must have exited). */
  restart(): Promise<void>;
  /** SIGTERM (if still running), then removes the database folder. */
  stop(): Promise<void>;
};

type Running = { child: ChildProcess; exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>; printed(pattern: RegExp | string): Promise<string> };

export async function startProcessServer(env: Record<string, string> = {}): Promise<ProcessServer> {
  const storage = await createServerDatabase();
  const databaseUrl = storage.url;
  const databasePath = storage.path;
  const port = await freePort();
  let output = "";
  let handle: Database.Database | undefined;

  const launch = async (): Promise<{ running: Running; issuer: string }> => {
    const server = await spawnServer({ port, databaseUrl, env: { ...offlineDefaultServices(env), ...env }, onOutput: (text) => (output += text) });
    return { running: { child: server.child, exit: server.exit, printed: server.printed }, issuer: server.issuer };
  };

  let { running, issuer } = await launch();

  const server: ProcessServer = {
    get issuer() {
      return issuer;
    },
    port,
    databaseUrl,
    databasePath,
    get child() {
      return running.child;
    },
    get pid() {
      return running.child.pid!;
    },
    database: () => storage.open(),
    db() {
      if (databasePath === undefined) throw new Error("db() opens the SQLite file; this server runs on PostgreSQL (use database())");
      handle ??= new Database(databasePath);
      handle.pragma("busy_timeout = 5000");
      return handle;
    },
    output: () => output,
    async printed(pattern) {
      const matches = typeof pattern === "string" ? output.includes(pattern) : pattern.test(output);
      if (!matches) await running.printed(pattern);
      return output;
    },
    exited: () => running.exit,
    signal(signal) {
      running.child.kill(signal);
    },
    async restart() {
      if (running.child.exitCode === null && running.child.signalCode === null) throw new Error("restart() needs the previous process to have exited");
      handle?.close();
      handle = undefined;
      ({ running, issuer } = await launch());
    },
    async stop() {
      handle?.close();
      handle = undefined;
      if (running.child.exitCode === null && running.child.signalCode === null) {
        running.child.kill("SIGTERM");
        await running.exit;
      }
      await storage.remove();
    },
  };
  return server;
}
