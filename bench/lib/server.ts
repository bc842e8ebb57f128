import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

/**
 * Starts the built server as a child process (exactly as in production:
 * `node --import tsx server.ts`) on a free loopback port with a fresh SQLite
 * file in a temporary folder, and stops it with SIGTERM.
 */

const run = promisify(execFile);
export const ROOT = path.resolve(import.meta.dirname, "../..");

export type BenchServer = {
  issuer: string;
  pid: number;
  databasePath: string;
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

export async function startServer(options: { nodeFlags?: string[] } = {}): Promise<BenchServer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-bench-"));
  const databasePath = path.join(dir, "atrium.db");
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [...(options.nodeFlags ?? []), "--import", "tsx", "server.ts"], {
    cwd: ROOT,
    env: {
      ...process.env,
      NODE_ENV: "production",
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_URL: `file:${databasePath}`,
      ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS: "1",
      ATRIUM_LOG_REQUESTS: "",
      // The limiter still runs on every request (its cost is part of what is measured); it just never refuses.
      ATRIUM_RATE_LIMIT_PAR_PER_MINUTE: "1000000",
      ATRIUM_RATE_LIMIT_TOKEN_PER_MINUTE: "1000000",
      ATRIUM_RATE_LIMIT_XRPC_PER_MINUTE: "10000000",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));

  const cleanup = () => rmSync(dir, { recursive: true, force: true });
  let issuer: string;
  try {
    issuer = await new Promise<string>((resolve, reject) => {
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
  } catch (error) {
    if (child.exitCode === null) child.kill("SIGTERM");
    cleanup();
    throw error;
  }

  return {
    issuer,
    pid: child.pid!,
    databasePath,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        await exited;
      }
      cleanup();
    },
  };
}

/** Creates an account through the real command line tool, on the server's database file. */
export async function createAccount(
  server: BenchServer,
  account: { handle: string; email: string; password: string },
): Promise<{ did: string; handle: string }> {
  const args = ["--import", "tsx", "scripts/account.ts", "create", "--handle", account.handle, "--email", account.email, "--password", account.password];
  const { stdout } = await run(process.execPath, args, { cwd: ROOT, env: { ...process.env, DATABASE_URL: `file:${server.databasePath}` } });
  return JSON.parse(stdout.trim()) as { did: string; handle: string };
}
