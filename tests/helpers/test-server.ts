import { spawn, execFile, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import Database from "better-sqlite3";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../..");

export type TestServer = {
  issuer: string;
  port: number;
  databasePath: string;
  /** Opens the server's SQLite file directly, for assertions on stored state. */
  db(): Database.Database;
  output(): string;
  stop(): Promise<void>;
};

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts the built server (npm test builds first) as a child process on a
 * free loopback port with its own SQLite file, and waits for its
 * "listening" line.
 */
export async function startTestServer(env: Record<string, string> = {}): Promise<TestServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-test-"));
  const databasePath = path.join(dir, "atrium.db");
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "server.ts"], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: "production",
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_URL: `file:${databasePath}`,
      ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS: "1",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));

  const issuer = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start in time:\n${output}`)), 30_000);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
    child.stdout?.on("data", () => {
      const line = output.split("\n").find((candidate) => candidate.includes('"event":"listening"'));
      if (line) {
        clearTimeout(timer);
        resolve((JSON.parse(line) as { issuer: string }).issuer);
      }
    });
  });

  let handle: Database.Database | undefined;
  return {
    issuer,
    port,
    databasePath,
    db() {
      handle ??= new Database(databasePath);
      handle.pragma("busy_timeout = 5000");
      return handle;
    },
    output: () => output,
    async stop() {
      handle?.close();
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Creates an account through the real command line tool. */
export async function createAccount(
  server: TestServer,
  account: { handle: string; email: string; password: string; did?: string },
): Promise<{ did: string; handle: string }> {
  const args = ["--import", "tsx", "scripts/account.ts", "create", "--handle", account.handle, "--email", account.email, "--password", account.password];
  if (account.did) args.push("--did", account.did);
  const { stdout } = await run(process.execPath, args, { cwd: ROOT, env: { ...process.env, DATABASE_URL: `file:${server.databasePath}` } });
  return JSON.parse(stdout.trim()) as { did: string; handle: string };
}
