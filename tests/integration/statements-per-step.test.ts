import path from "node:path";
import { pathToFileURL } from "node:url";
import net from "node:net";
import BetterSqlite3 from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../app/.server/config.ts";
import type * as ServerEntry from "../../server.ts";
import type { Started } from "../../server.ts";
import { createLogger } from "../../server/logger.ts";
import { COMMITS_PER_CLEANUP } from "../../app/.server/stores/sql-repo-store.ts";
import { ALICE, CLIENT_ID, SCOPE } from "../helpers/flow.ts";
import { approveWithPassword, CookieJar } from "../helpers/consent.ts";
import { createServerDatabase, testEngine, type ServerDatabase } from "../helpers/test-database.ts";
import { createAccountFor, freePort } from "../helpers/test-server.ts";
import { createPkce, DpopClient, generateDpopKey, type TokenSet } from "../../scripts/lib/dpop-client.ts";

/**
 * Statements per step, counted through the drivers (docs/decisions/0035): on PostgreSQL every round trip of the
 * server's pool (BEGIN, COMMIT and advisory locks included), on SQLite every statement
 * better-sqlite3 runs (BEGIN and COMMIT included). The built server runs in this process, on the Vitest project's
 * engine, so the counts are those of the hot paths as deployed. Counts are deterministic, unlike times: a step that
 * gains a statement fails here. The request limiter's writes (the once-a-second flush of its in-memory counts, and a
 * key's first request of a window) are left out: they are not per request.
 */

type Recorded = { connection: object; text: string };
/**
 * What the spies know of one PostgreSQL socket: the text of each statement it prepared, the one its last Bind runs, and
 * whether it is in a transaction, and whether what it writes next is the request limiter's: a statement of it, or
 * anything of its flush's transaction up to its COMMIT.
 */
type SocketTexts = { byName: Map<string, string>; bound: string; inTransaction: boolean; limiterStatement: boolean; limiterTransaction: boolean };

const recorded: Recorded[] = [];
let counting = false;
/** Writes to PostgreSQL's sockets while counting: each one a round trip's worth of the server's sending. */
const writes = { count: 0 };

/** The PostgreSQL server's port, once the test database is made: only sockets to it are counted. */
let postgresPort: number | undefined;

/**
 * Wraps the drivers once. PostgreSQL: the built server carries its own copy of `pg` (docs/decisions/0025b), so its
 * statements are counted where they leave this process, on the socket: every message of the frontend protocol is one
 * `write`, a simple Query ('Q', BEGIN and COMMIT) and a Sync ('S', which ends each extended-protocol statement) are
 * one statement each, and a Parse ('P') names the text a later Bind ('B') runs. (Statements, not round trips: a
 * transaction's statements sent ahead with `send` share the socket's write and round trip with the next one it waits
 * for, docs/decisions/0037, second amendment; each still carries its own Sync.) SQLite: every statement
 * better-sqlite3 runs (a native module, loaded from node_modules by the build too).
 */
function installSpies(): () => void {
  const restore: (() => void)[] = [];
  const texts = new WeakMap<object, SocketTexts>();
  const socketWrite = net.Socket.prototype.write;
  net.Socket.prototype.write = function (this: net.Socket, ...args: unknown[]) {
    const chunk = args[0];
    // Parses are read whether or not a step is being counted: a statement prepared before the count began (pg prepares
    // a named statement once per connection) is named by its text when a counted Bind runs it.
    if (postgresPort !== undefined && this.remotePort === postgresPort && Buffer.isBuffer(chunk) && chunk.length >= 5) {
      const socket = texts.get(this) ?? { byName: new Map<string, string>(), bound: "", inTransaction: false, limiterStatement: false, limiterTransaction: false };
      texts.set(this, socket);
      const cstrings = (from: number, count: number) => {
        const found: string[] = [];
        for (let start = from; found.length < count; ) {
          const end = chunk.indexOf(0, start);
          found.push(chunk.toString("utf8", start, end));
          start = end + 1;
        }
        return found;
      };
      const type = String.fromCharCode(chunk[0]!);
      const query = type === "Q" ? cstrings(5, 1)[0]! : undefined;
      if (query !== undefined && counting) recorded.push({ connection: this, text: query });
      if (type === "P") {
        const [name, text] = cstrings(5, 2);
        socket.byName.set(name!, text!);
        socket.bound = text!;
      }
      if (type === "B") socket.bound = socket.byName.get(cstrings(5, 2)[1]!) ?? socket.bound;
      if (type === "S" && chunk.length === 5 && counting) recorded.push({ connection: this, text: socket.bound });
      // Whether what the socket writes now is the request limiter's: its statement (from its Parse, Bind or Query to
      // the next statement's), or anything of its flush's transaction, up to the write of its COMMIT.
      if (type === "P" || type === "B" || query !== undefined) socket.limiterStatement = isLimiter(query ?? socket.bound);
      if (socket.limiterStatement && socket.inTransaction) socket.limiterTransaction = true;
      if (query !== undefined && /^\s*BEGIN\b/i.test(query)) socket.inTransaction = true;
      if (query !== undefined && /^\s*(COMMIT|ROLLBACK)\b/i.test(query)) socket.inTransaction = false;
    }
    return (socketWrite as (...a: unknown[]) => boolean).apply(this, args);
  } as typeof socketWrite;
  restore.push(() => (net.Socket.prototype.write = socketWrite));
  // What leaves the socket: a corked socket hands several messages to one _writev (docs/decisions/0037, second amendment).
  const prototype = net.Socket.prototype as unknown as Record<"_write" | "_writev", (...a: unknown[]) => unknown>;
  for (const method of ["_write", "_writev"] as const) {
    const original = prototype[method];
    prototype[method] = function (this: net.Socket, ...args: unknown[]) {
      if (postgresPort === undefined || this.remotePort !== postgresPort) return original.apply(this, args);
      const socket = texts.get(this);
      // The request limiter's once-a-second flush lands in the window more often the slower the machine: not the step's.
      if (counting && !socket?.limiterStatement && !socket?.limiterTransaction) writes.count++;
      if (socket && !socket.inTransaction) socket.limiterTransaction = false;
      return original.apply(this, args);
    };
    restore.push(() => (prototype[method] = original));
  }

  const probe = new BetterSqlite3(":memory:");
  const statementPrototype = Object.getPrototypeOf(probe.prepare("SELECT 1")) as Record<string, (...a: unknown[]) => unknown>;
  probe.close();
  for (const method of ["run", "get", "all", "iterate"]) {
    const original = statementPrototype[method]!;
    statementPrototype[method] = function (this: { source: string; database: object }, ...args: unknown[]) {
      if (counting) recorded.push({ connection: this.database, text: this.source });
      return original.apply(this, args);
    };
    restore.push(() => (statementPrototype[method] = original));
  }
  return () => restore.forEach((undo) => undo());
}

/** The statements of a stretch, less the request limiter's (whole transactions of it, BEGIN and COMMIT too). */
function perRequestStatements(statements: Recorded[]): string[] {
  const kept: string[] = [];
  const open = new Map<object, string[]>();
  for (const { connection, text } of statements) {
    const trimmed = text.trim().toUpperCase();
    const transaction = open.get(connection);
    if (trimmed.startsWith("BEGIN")) {
      open.set(connection, [text]);
      continue;
    }
    if (transaction) {
      transaction.push(text);
      if (trimmed === "COMMIT" || trimmed === "ROLLBACK") {
        open.delete(connection);
        if (!transaction.some(isLimiter)) kept.push(...transaction);
      }
      continue;
    }
    // The end of a transaction that began before the count did (the limiter's flush, landing on the window's edge on a
    // busy machine): not the step's, whose transactions all begin inside the window.
    if (trimmed === "COMMIT" || trimmed === "ROLLBACK") continue;
    if (!isLimiter(text)) kept.push(text);
  }
  return kept;
}

/**
 * The request limiter's statements (its counters' upsert and their cleanup), not the account's write budget (the
 * spending that names several budgets and returns their keys: docs/decisions/0045), which every write pays for.
 */
const isLimiter = (text: string) => text.includes('"RateLimit"') && !text.includes('RETURNING "key", "count", "windowEndsAt"');

async function counted<T>(step: () => Promise<T>): Promise<{ result: T; statements: string[]; writes: number }> {
  recorded.length = 0;
  writes.count = 0;
  counting = true;
  try {
    const result = await step();
    return { result, statements: perRequestStatements(recorded), writes: writes.count };
  } finally {
    counting = false;
  }
}

/**
 * createRecord's writes to PostgreSQL's sockets: per commit the jti, the access token and the write budget, one each,
 * then the commit's transaction in two (BEGIN, the account's lock and the swap; then everything else it sends ahead,
 * with its COMMIT: docs/decisions/0037, second amendment). Its statements (above) are counted apart. The request limiter's writes are
 * left out, as its statements are: its once-a-second flush lands in the window more often the slower the machine (on
 * a busy one, 22 writes were counted with them; without them, 16 on a machine kept busy by two spinning processes).
 * A few more for what may land in any window: the grant's "last used", written at most once a minute, and the
 * start-up of a connection, should the pool open one meanwhile.
 */
const CREATE_RECORD_WRITES = COMMITS_PER_CLEANUP * 5 + 4;

/**
 * createRecord: the statements of COMMITS_PER_CLEANUP single-record commits in a row, of which exactly one prunes
 * expired events and blobs (docs/decisions/0037, amendment). Each commit on PostgreSQL: the DPoP proof's jti and the
 * access token, the account's write budget (one statement, docs/decisions/0045), then BEGIN, the account's lock, the
 * head's swap, the new blocks, the record, the removed blocks, the sequencer's lock, the event, COMMIT (12). On SQLite
 * the locks are BEGIN IMMEDIATE's, the write budget's statement is a transaction of three, and the jti is at most a
 * transaction of four (BEGIN, its cleanup, its insert, COMMIT; the insert alone on three requests in four,
 * docs/decisions/0039): at most 15. And on one commit of the four, the two prunes.
 */
const CREATE_RECORD_LIMIT = {
  postgresql: COMMITS_PER_CLEANUP * 12 + 2,
  sqlite: COMMITS_PER_CLEANUP * 15 + 2,
};

/**
 * The most statements each step may take, per engine. PostgreSQL: a single-use step is one statement where the SQL
 * allows it (data-modifying WITH clauses); PAR decides the per-address bound of pending requests under an advisory
 * lock (docs/decisions/0022), a session lock taken before its statement and released after it (docs/decisions/0038),
 * beside the DPoP proof's jti. SQLite has no data-modifying WITH: its steps stay
 * transactions of several statements, run in-process.
 */
const LIMITS = {
  postgresql: { par: 4, "code-exchange": 3, refresh: 3, getSession: 2, createRecord: CREATE_RECORD_LIMIT.postgresql },
  sqlite: { par: 10, "code-exchange": 13, refresh: 13, getSession: 5, createRecord: CREATE_RECORD_LIMIT.sqlite },
} as const;

describe(`statements per step on ${testEngine()}, counted through the driver`, () => {
  const engine = testEngine();
  let database: ServerDatabase;
  let started: Started;
  let issuer: string;
  let uninstall: () => void;
  const counts: Record<string, string[]> = {};
  let createRecordWrites = 0;

  beforeAll(async () => {
    uninstall = installSpies();
    database = await createServerDatabase();
    if (engine === "postgresql") postgresPort = Number(new URL(database.url).port);
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    const config = loadConfig({
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: issuer,
      DATABASE_URL: database.url,
      ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS: "1",
    });
    const entry = pathToFileURL(path.join(import.meta.dirname, "..", "..", "build", "server", "server.js")).href;
    const { startServer } = (await import(entry)) as typeof ServerEntry;
    started = await startServer(config, { dev: false, log: createLogger("silent") });
    await createAccountFor(database.url, issuer, ALICE);

    const client = new DpopClient(issuer, await generateDpopKey(), CLIENT_ID);
    const redirectUri = "http://127.0.0.1:54321/callback";
    const pushed = async () => {
      const pkce = createPkce();
      const par = await client.pushAuthorizationRequest({ redirect_uri: redirectUri, scope: SCOPE, state: "s", code_challenge: pkce.challenge, code_challenge_method: "S256" });
      expect(par.status).toBe(201);
      return { requestUri: par.body.request_uri, verifier: pkce.verifier };
    };
    const codeFor = async (requestUri: string) => {
      const location = await approveWithPassword(client.authorizeUrl(requestUri), new CookieJar(), ALICE.handle, ALICE.password);
      return location.searchParams.get("code")!;
    };
    // A first run of every step: the nonce, prepared statements, the limiter's keys and the sign-in are in place.
    const first = await pushed();
    const tokens = (await client.exchangeCode(await codeFor(first.requestUri), first.verifier, redirectUri)).body;
    const refreshed = (await client.refresh(tokens.refresh_token)).body;
    await client.xrpc(refreshed.access_token, "com.atproto.server.getSession");

    const par = await counted(pushed);
    counts.par = par.statements;
    const code = await codeFor(par.result.requestUri);
    const exchange = await counted(() => client.exchangeCode(code, par.result.verifier, redirectUri));
    expect(exchange.result.status).toBe(200);
    counts["code-exchange"] = exchange.statements;
    const refresh = await counted(() => client.refresh(exchange.result.body.refresh_token));
    expect(refresh.result.status).toBe(200);
    counts.refresh = refresh.statements;
    const session = await counted(() => client.xrpc((refresh.result.body as TokenSet).access_token, "com.atproto.server.getSession"));
    expect(session.result.status).toBe(200);
    counts.getSession = session.statements;

    // This process's first commit (its cleanup is due), then the next COMMITS_PER_CLEANUP, counted together.
    const accessToken = (refresh.result.body as TokenSet).access_token;
    // No rkey: the server gives each post a TID, the key type its lexicon asks for.
    const createRecord = (text: string) => client.xrpc(accessToken, "com.atproto.repo.createRecord", { json: { repo: ALICE.handle, collection: "app.bsky.feed.post", record: { text, createdAt: "2026-11-26T00:00:00.000Z" } } });
    expect((await createRecord("first")).status).toBe(200);
    const commits = await counted(async () => {
      for (let i = 0; i < COMMITS_PER_CLEANUP; i++) expect((await createRecord(`post${i}`)).status).toBe(200);
    });
    counts.createRecord = commits.statements;
    createRecordWrites = commits.writes;
  });

  afterAll(async () => {
    started?.sync.close();
    started?.server.closeAllConnections();
    if (started) await new Promise<void>((resolve) => started.server.close(() => resolve()));
    await started?.shutdown();
    await database?.remove();
    uninstall?.();
  });

  for (const step of ["par", "code-exchange", "refresh", "getSession", "createRecord"] as const) {
    it(`${step}: at most ${LIMITS[engine][step]} statements`, () => {
      const statements = counts[step]!;
      // Every step reads and writes the database: a count of none means the spy no longer sees the driver (as when the
      // build began to carry its own pg), not a step without statements.
      expect(statements.length).toBeGreaterThan(0);
      expect(statements.length, statements.join("\n")).toBeLessThanOrEqual(LIMITS[engine][step]);
    });
  }

  it.runIf(engine === "postgresql")(`createRecord: at most ${CREATE_RECORD_WRITES} writes to PostgreSQL for ${COMMITS_PER_CLEANUP} commits`, () => {
    // None would mean the spy no longer sees the sockets' writes.
    expect(createRecordWrites).toBeGreaterThan(0);
    expect(createRecordWrites).toBeLessThanOrEqual(CREATE_RECORD_WRITES);
  });
});
