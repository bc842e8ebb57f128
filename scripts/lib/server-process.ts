import { execFile, spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { promisify } from "node:util";

/**
 * Starts the built server as production runs it (`node
 * build/server/server.js`, what `npm start` runs after the build) in a child
 * process and waits for its "listening" line. Shared by the integration tests
 * and the benchmarks; `npm test` and `npm run bench` build first.
 */

/** The entry of the server build (vite.config.ts, docs/decisions/0025b). */
export const SERVER_ENTRY = path.join("build", "server", "server.js");
/** The account command line tool (scripts/account.ts) in the same build, run by plain `node` (docs/decisions/0036). */
export const ACCOUNT_ENTRY = path.join("build", "server", "account.js");

export const PROJECT_ROOT = path.resolve(import.meta.dirname, "../..");
const run = promisify(execFile);

export type ExitStatus = { code: number | null; signal: NodeJS.Signals | null };

export type ServerProcess = {
  child: ChildProcess;
  issuer: string;
  /** Everything this process printed so far. */
  output(): string;
  /**
   * Resolves with the output once it matches (a pattern, or a test of the whole output): log lines are written in
   * batches (docs/decisions/0035), so a line about a request may follow its answer. Rejects if the process exits
   * first; the time limit is a safety net.
   */
  printed(pattern: OutputPattern): Promise<string>;
  exit: Promise<ExitStatus>;
  /** SIGTERM unless already gone; resolves once it has exited. */
  stop(): Promise<ExitStatus>;
};

/** What `printed` waits for: text, a pattern, or a test of everything printed so far (e.g. a count of lines). */
export type OutputPattern = RegExp | string | ((output: string) => boolean);

export async function freePort(): Promise<number> {
  const held = await holdFreePort();
  await held.release();
  return held.port;
}

/** A loopback port held open until `release`: nothing else on the machine is given it meanwhile. */
export type HeldPort = { port: number; release(): Promise<void> };

/**
 * Takes a free loopback port and keeps it bound until `release`. A port merely found free (freePort) is let go at once
 * and can be handed to the next process that asks for one: hold it when something must bind it later, after other
 * processes have started (nginx in front of Atrium processes that must know its address when they start).
 */
export function holdFreePort(): Promise<HeldPort> {
  return new Promise((resolve, reject) => {
    const holder = net.createServer();
    holder.once("error", reject);
    holder.listen(0, "127.0.0.1", () => {
      const address = holder.address();
      const port = typeof address === "object" && address ? address.port : 0;
      resolve({ port, release: () => new Promise<void>((done) => holder.close(() => done())) });
    });
  });
}

export async function spawnServer(options: {
  port: number;
  /** DATABASE_URL: file:… (SQLite) or postgresql://… */
  databaseUrl: string;
  env?: Record<string, string>;
  nodeFlags?: string[];
  onOutput?: (text: string) => void;
}): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...(options.nodeFlags ?? []), SERVER_ENTRY], {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      NODE_ENV: "production",
      PORT: String(options.port),
      HOST: "127.0.0.1",
      DATABASE_URL: options.databaseUrl,
      ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS: "1",
      ...options.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exit = new Promise<ExitStatus>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  let output = "";
  const collect = (chunk: Buffer) => {
    const text = chunk.toString();
    output += text;
    options.onOutput?.(text);
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    return exit;
  };
  const issuer = await new Promise<string>((resolve, reject) => {
    // A safety net against a server that hangs, not a speed check: generous, for a machine under heavy load.
    const timer = setTimeout(() => reject(new Error(`server did not start in time:\n${output}`)), 180_000);
    void exit.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code ?? signal}) before listening:\n${output}`));
    });
    // Until the line appears: the server logs a line per request once it listens, so the output is not scanned after.
    const waitForListening = () => {
      const line = output.split("\n").find((candidate) => candidate.includes('"event":"listening"'));
      if (line) {
        clearTimeout(timer);
        child.stdout?.off("data", waitForListening);
        resolve((JSON.parse(line) as { issuer: string }).issuer);
      }
    };
    child.stdout?.on("data", waitForListening);
  }).catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  const printed = (pattern: OutputPattern) =>
    new Promise<string>((resolve, reject) => {
      const matches = () => (typeof pattern === "string" ? output.includes(pattern) : typeof pattern === "function" ? pattern(output) : pattern.test(output));
      if (matches()) return resolve(output);
      const timer = setTimeout(() => finish(new Error(`the server never printed ${String(pattern)}:\n${output}`)), 120_000);
      const check = () => {
        if (matches()) finish();
      };
      const finish = (error?: Error) => {
        clearTimeout(timer);
        child.stdout?.off("data", check);
        child.stderr?.off("data", check);
        if (error) reject(error);
        else resolve(output);
      };
      child.stdout?.on("data", check);
      child.stderr?.on("data", check);
      void exit.then(() => (matches() ? finish() : finish(new Error(`the server exited without printing ${String(pattern)}:\n${output}`))));
    });
  return { child, issuer, output: () => output, printed, exit, stop };
}

/**
 * Creates an account through the real command line tool, on the given database (DATABASE_URL), for the server at
 * `publicUrl` (its DID document's PDS). The CLI registers its did:plc at ATRIUM_PLC_DIRECTORY_URL (from the
 * environment). It runs the tool's build (build/server/account.js, the same code as `npm run account` without
 * compiling TypeScript at every call: docs/decisions/0036). The benchmarks use it; the tests run the tool's commands
 * in their own process (tests/helpers/test-server.ts: createAccountFor).
 */
export async function createAccountOn(
  databaseUrl: string,
  account: { handle: string; email: string; password: string },
  publicUrl?: string,
  extraEnv: Record<string, string> = {},
): Promise<{ did: string; handle: string }> {
  const args = [ACCOUNT_ENTRY, "create", "--handle", account.handle, "--email", account.email, "--password", account.password];
  const env = { ...process.env, DATABASE_URL: databaseUrl, ...(publicUrl ? { PUBLIC_URL: publicUrl } : {}), ...extraEnv };
  const { stdout } = await run(process.execPath, args, { cwd: PROJECT_ROOT, env });
  return JSON.parse(stdout.trim()) as { did: string; handle: string };
}
