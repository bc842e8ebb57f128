import Database from "better-sqlite3";
import type { Database as StoreDatabase } from "../../app/.server/db/sql.ts";
import { runAccountCommand } from "../../scripts/lib/account-commands.ts";
import { freePort, spawnServer, type ExitStatus, type OutputPattern } from "../../scripts/lib/server-process.ts";
import { createServerDatabase, openDatabaseAt } from "./test-database.ts";

export { freePort };

export type TestServer = {
  issuer: string;
  port: number;
  /** The server's process id (to look at its sockets in /proc). */
  pid: number;
  /** Its DATABASE_URL: pass it to a second server to share the database (two processes). */
  databaseUrl: string;
  /** The SQLite file; undefined when the server runs on PostgreSQL. */
  databasePath: string | undefined;
  /** The server's database, whichever the engine, for assertions on stored state (tests/helpers/databases.ts: rowOf, rowsOf, execute). */
  database(): StoreDatabase;
  /** The SQLite file opened directly, for the few tests about SQLite itself; throws on PostgreSQL. */
  db(): Database.Database;
  output(): string;
  /** Waits for the output to match (scripts/lib/server-process.ts): log lines come in batches. */
  printed(pattern: OutputPattern): Promise<string>;
  /** Resolves when the server process has exited, however it ended (as ProcessServer's). */
  exited(): Promise<ExitStatus>;
  stop(): Promise<void>;
};

/**
 * What every test server and the accounts the tests create have unless a test says otherwise (docs/decisions/0036):
 * password hashes at a test cost, as the suite checks thousands of passwords (the production cost is covered by
 * app/.server/accounts/password.test.ts and by the account CLI's own test, tests/integration/identity.test.ts).
 */
const TEST_SETTINGS: Record<string, string> = { ATRIUM_TEST_FAST_PASSWORD_HASHES: "1" };

/** A loopback port nothing listens on (tcpmux): a connection there is refused at once. */
const CLOSED_PORT_URL = "http://127.0.0.1:1";

/**
 * Service proxying's default services are the reference installer's, on the network (https://api.bsky.app,
 * https://mod.bsky.app: docs/decisions/0048). A test server that does not name its own sends their calls to a closed
 * loopback port instead (502 UpstreamFailure), so that no test reaches outside the machine.
 */
export function offlineDefaultServices(overrides: Record<string, string>): Record<string, string> {
  const offline: Record<string, string> = {};
  if (overrides.ATRIUM_APPVIEW === undefined && overrides.ATRIUM_APPVIEW_URL === undefined) offline.ATRIUM_APPVIEW_URL = CLOSED_PORT_URL;
  if (overrides.ATRIUM_REPORT_SERVICE === undefined && overrides.ATRIUM_REPORT_SERVICE_URL === undefined) offline.ATRIUM_REPORT_SERVICE_URL = CLOSED_PORT_URL;
  return offline;
}

/**
 * Starts the built server (npm test builds first) as a child process on a
 * free loopback port with a database of its own — a SQLite file, or a
 * PostgreSQL database when the Vitest project runs on that engine
 * (tests/helpers/test-database.ts) — and waits for its "listening" line.
 * `overrides` replaces the test defaults (e.g. DATABASE_URL: another server's
 * `databaseUrl`, to share its database).
 */
export async function startTestServer(overrides: Record<string, string> = {}): Promise<TestServer> {
  const env = { ...TEST_SETTINGS, ...offlineDefaultServices(overrides), ...overrides };
  const own = env.DATABASE_URL === undefined ? await createServerDatabase() : undefined;
  const databaseUrl = env.DATABASE_URL ?? own!.url;
  const databasePath = databaseUrl.startsWith("file:") ? databaseUrl.slice("file:".length) : undefined;
  const { port, server } = await spawnOnFreePort(databaseUrl, env).catch(async (error: unknown) => {
    await own?.remove();
    throw error;
  });

  let shared: StoreDatabase | undefined;
  let sqlite: Database.Database | undefined;
  return {
    issuer: server.issuer,
    port,
    pid: server.child.pid!,
    databaseUrl,
    databasePath,
    database: () => own?.open() ?? (shared ??= openDatabaseAt(databaseUrl)),
    db() {
      if (databasePath === undefined) throw new Error("db() opens the SQLite file; this server runs on PostgreSQL (use database())");
      sqlite ??= new Database(databasePath);
      sqlite.pragma("busy_timeout = 5000");
      return sqlite;
    },
    output: server.output,
    printed: server.printed,
    exited: () => server.exit,
    async stop() {
      sqlite?.close();
      await shared?.close();
      await server.stop();
      await own?.remove();
    },
  };
}

/**
 * A port found free is let go before the server binds it, and another process of the test run may take it meanwhile:
 * the server then exits with EADDRINUSE, and is started again on another free port.
 */
async function spawnOnFreePort(databaseUrl: string, env: Record<string, string>, attempts = 3) {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return { port, server: await spawnServer({ port, databaseUrl, env }) };
    } catch (error) {
      if (attempt >= attempts || !String(error).includes("EADDRINUSE")) throw error;
    }
  }
}

/** What the account tool is told beyond the account itself: `recoveryKey` (a did:key of the person's own), settings. */
export type AccountOptions = { recoveryKey?: string; env?: Record<string, string> };

/**
 * Creates an account with the account command line tool's own code, its did:plc registered at the test run's PLC
 * directory (see createAccountFor). A server started with keys of its own (ATRIUM_KEY_ENCRYPTION_KEY…) needs them
 * passed in `options.env` too, as an operator's tool has the server's settings.
 */
export async function createAccount(server: TestServer, account: { handle: string; email: string; password: string }, options: AccountOptions = {}): Promise<{ did: string; handle: string }> {
  return createAccountFor(server.databaseUrl, server.issuer, account, options);
}

/**
 * Runs the account tool's `create` (scripts/lib/account-commands.ts, what `npm run account -- create` runs) in this
 * process, on the given database for the server at `publicUrl` (its DID document's PDS), at the test password cost:
 * a Node process per account cost more than the account itself, and the suite makes hundreds (docs/decisions/0036,
 * amendment). The tool as a command is run by tests/integration/identity.test.ts.
 */
export async function createAccountFor(
  databaseUrl: string,
  publicUrl: string,
  account: { handle: string; email: string; password: string },
  options: AccountOptions = {},
): Promise<{ did: string; handle: string }> {
  const printed: string[] = [];
  const argv = ["create", "--handle", account.handle, "--email", account.email, "--password", account.password, ...(options.recoveryKey ? ["--recovery-key", options.recoveryKey] : [])];
  const env = { ...process.env, ...TEST_SETTINGS, ...options.env, DATABASE_URL: databaseUrl, PUBLIC_URL: publicUrl };
  await runAccountCommand(argv, { env, print: (line) => printed.push(line) });
  return JSON.parse(printed.join("")) as { did: string; handle: string };
}
