import { execFile, spawn, type ChildProcess } from "node:child_process";
import { accessSync, chownSync, constants, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import type { Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { freePort } from "./server-process.ts";

/**
 * A private PostgreSQL cluster from the machine's server binaries, for a test
 * run (tests/helpers/postgres-cluster.ts: no fsync) or a benchmark run
 * (bench/lib/postgres.ts: production-like settings). The caller chooses the
 * settings; everything else is the same.
 *
 * `initdb` into a fresh folder under the system's temp folder, `trust`
 * authentication, TCP on 127.0.0.1 only (a free port) and the unix socket in
 * that folder. Run as root, initdb and postgres run as the `postgres` system
 * user (PostgreSQL refuses root) through `setpriv`, which execs, so the PID
 * this process holds is the postmaster's. The postmaster runs in a session of
 * its own, so a Ctrl-C in the terminal reaches only the program that started
 * it, which then stops it (or, like Vitest, exits without doing so: a killed
 * program runs nothing at all). A watchdog (postgres-watchdog.sh), whose
 * standard input is a pipe from this process, sees the pipe close, stops that
 * postmaster by its PID and removes the folder.
 */

const run = promisify(execFile);
const WATCHDOG = path.join(import.meta.dirname, "postgres-watchdog.sh");

/** The superuser (trust authentication, no password). */
export const ADMIN_ROLE = "postgres";

export type PostgresCluster = {
  /** postgresql://postgres@127.0.0.1:<port>/postgres */
  adminUrl: string;
  port: number;
  /** The postmaster's PID. */
  pid: number;
  /** The cluster's folder (data folder and unix socket). */
  dir: string;
  /** The folder of the server binaries it runs. */
  bin: string;
  /** The last 64 KiB postgres printed. */
  output(): string;
  /** Fast shutdown by the postmaster's PID, then removes the folder. */
  stop(): Promise<void>;
};

/** The folder holding initdb and postgres: $ATRIUM_TEST_POSTGRES_BIN, else the newest /usr/lib/postgresql/<version>/bin, else pg_config's, else PATH. */
export async function findPostgresBinaries(): Promise<string> {
  const candidates: string[] = [];
  if (process.env.ATRIUM_TEST_POSTGRES_BIN) candidates.push(process.env.ATRIUM_TEST_POSTGRES_BIN);
  const debian = "/usr/lib/postgresql";
  if (existsSync(debian)) {
    const versions = readdirSync(debian).filter((name) => /^\d+(\.\d+)?$/.test(name));
    versions.sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((version) => path.join(debian, version, "bin")));
  }
  const pgConfig = await run("pg_config", ["--bindir"]).then(({ stdout }) => stdout.trim(), () => "");
  if (pgConfig) candidates.push(pgConfig);
  candidates.push(...(process.env.PATH ?? "").split(path.delimiter).filter(Boolean));
  const found = candidates.find((dir) => isExecutable(path.join(dir, "initdb")) && isExecutable(path.join(dir, "postgres")));
  if (found) return found;
  throw new Error(
    "PostgreSQL's server programs (initdb, postgres) were not found in /usr/lib/postgresql/<version>/bin, pg_config --bindir " +
      "or PATH: the tests run a real PostgreSQL. Install Debian's package with `apt-get install -y postgresql` " +
      "(.ci/run does this when it is missing), or point ATRIUM_TEST_POSTGRES_BIN at a folder holding initdb and postgres.",
  );
}

/** Whether the server binaries in `bin` come with an extension library, e.g. pg_stat_statements (Debian: ../lib/<name>.so). */
export function hasLibrary(bin: string, name: string): boolean {
  return existsSync(path.join(bin, "..", "lib", `${name}.so`));
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

type Owner = { uid: number; gid: number };

/** Run as root: the `postgres` system user, whom initdb and postgres run as. Otherwise: nobody to switch to. */
async function clusterOwner(): Promise<Owner | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const id = async (flag: string) => Number((await run("id", [flag, "postgres"])).stdout.trim());
  try {
    return { uid: await id("-u"), gid: await id("-g") };
  } catch {
    throw new Error(
      "The tests run as root, and PostgreSQL refuses to: they run it as the `postgres` system user, which does not exist here. " +
        "Install Debian's package with `apt-get install -y postgresql` (it creates that user), or run the tests as another user.",
    );
  }
}

/** The command line that runs `binary` as `owner` (setpriv execs it: the PID stays the program's own). */
function asOwner(owner: Owner | undefined, binary: string, args: string[]): [string, string[]] {
  if (!owner) return [binary, args];
  return ["setpriv", [`--reuid=${owner.uid}`, `--regid=${owner.gid}`, "--init-groups", "--", binary, ...args]];
}

/**
 * initdb into a fresh folder, then postgres on a free 127.0.0.1 port with `settings` (-c name=value; port and
 * unix_socket_directories are set here); resolves once it accepts connections.
 */
export async function startPostgresCluster(options: { settings: Record<string, string>; bin?: string }): Promise<PostgresCluster> {
  const bin = options.bin ?? (await findPostgresBinaries());
  const owner = await clusterOwner();
  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-postgres-"));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const dataDir = path.join(dir, "data");
  try {
    const [command, args] = asOwner(owner, path.join(bin, "initdb"), [
      "--pgdata", dataDir, "--username", ADMIN_ROLE, "--auth", "trust", "--encoding", "UTF8", "--locale", "C", "--no-sync",
    ]);
    await run(command, args, { cwd: dir }).catch((error: { stderr?: string; message: string }) => {
      throw new Error(`initdb failed: ${error.stderr || error.message}`);
    });
    // A free port can be taken between the probe and postgres's bind: try another then.
    for (let attempt = 1; ; attempt++) {
      try {
        return await startPostmaster(bin, owner, dir, await freePort(), options.settings);
      } catch (error) {
        if (!(error instanceof PortTaken) || attempt === 3) throw error;
      }
    }
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

class PortTaken extends Error {}

async function startPostmaster(bin: string, owner: Owner | undefined, dir: string, port: number, base: Record<string, string>): Promise<PostgresCluster> {
  const dataDir = path.join(dir, "data");
  const settings = Object.entries({ ...base, port: String(port), unix_socket_directories: dir }).flatMap(([name, value]) => ["-c", `${name}=${value}`]);
  const [command, args] = asOwner(owner, path.join(bin, "postgres"), ["-D", dataDir, ...settings]);
  const child = spawn(command, args, { cwd: dir, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-65536));
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;

  // The postmaster logs "ready to accept connections" once it does (at log_min_messages=warning too: it is a LOG
  // line that is always written). Settle on that line or on the process's end, whichever comes first.
  await new Promise<void>((resolve, reject) => {
    const onData = () => {
      if (/database system is ready to accept connections/.test(output)) {
        child.stderr!.off("data", onData);
        resolve();
      }
    };
    child.stderr!.on("data", onData);
    child.once("error", reject);
    void exited.then(() => {
      const message = `postgres exited before accepting connections (port ${port}):\n${output}`;
      reject(/could not bind|Address already in use/i.test(output) ? new PortTaken(message) : new Error(message));
    });
  });
  const pid = child.pid!;
  const watchdog = startWatchdog(pid, dir);

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      if (running()) {
        // SIGINT: fast shutdown (connected clients are told and cut). SIGQUIT (immediate) should that hang.
        process.kill(pid, "SIGINT");
        const escalate = setTimeout(() => running() && process.kill(pid, "SIGQUIT"), 10_000);
        await exited;
        clearTimeout(escalate);
      }
      rmSync(dir, { recursive: true, force: true });
      watchdog.stdin!.end("stopped\n");
    })());
  return { adminUrl: databaseUrl(port, ADMIN_ROLE, "postgres"), port, pid, dir, bin, output: () => output, stop };
}

/** The watchdog of postgres-watchdog.sh: in its own session, holding the read end of a pipe this process never closes until it stops the cluster itself. */
function startWatchdog(pid: number, dir: string): ChildProcess {
  const watchdog = spawn("bash", [WATCHDOG, String(pid), dir], { detached: true, stdio: ["pipe", "ignore", "ignore"] });
  // Neither the watchdog nor its pipe keeps this process alive.
  watchdog.unref();
  (watchdog.stdin as unknown as Socket).unref();
  watchdog.stdin!.on("error", () => undefined);
  return watchdog;
}

export function databaseUrl(port: number, role: string, database: string): string {
  return `postgresql://${role}@127.0.0.1:${port}/${database}`;
}

/** Runs `body` on a fresh connection to `url`, closed afterwards. */
export async function withClient<T>(url: string, body: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => undefined);
  await client.connect();
  try {
    return await body(client);
  } finally {
    await client.end();
  }
}
