import diagnostics_channel from "node:diagnostics_channel";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../app/.server/config.ts";
import { STATEMENT_CHANNEL, type StatementReport } from "../../app/.server/db/statement-reports.ts";
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
 * Statements per step, counted through the driver (docs/decisions/0035, 0054): every statement the server's database
 * driver sends, as it reports them (app/.server/db/statement-reports.ts, a diagnostics channel this process
 * subscribes to by name, which the built server's own copy of the driver publishes on): on PostgreSQL every round
 * trip's statements (BEGIN, COMMIT and advisory locks included), on SQLite every statement (BEGIN and COMMIT
 * included). The built server runs in this process, on the Vitest project's engine, so the counts are those of the
 * hot paths as deployed. Counts are deterministic, unlike times: a step that gains a statement fails here. The request
 * limiter's writes (the once-a-second flush of its in-memory counts, and a key's first request of a window) are left
 * out: they are not per request.
 */

/** A report, and the counted window it was sent in (undefined outside any). */
type Recorded = StatementReport & { window: number | undefined };

const recorded: Recorded[] = [];
let windows = 0;
let window: number | undefined;
const record = (message: unknown) => recorded.push({ ...(message as StatementReport), window });

/**
 * The step's statements among those recorded: those sent inside the window, less the request limiter's (the whole of
 * a transaction with a statement of it, BEGIN and COMMIT too) and less any unit that began before the window (the
 * end of a transaction that began before the count did, landing on the window's edge on a busy machine, is not the
 * step's, whose units all begin inside the window).
 */
function stepStatements(reports: Recorded[], counted: number): Recorded[] {
  const limiterUnits = new Set<object>();
  const unitsBegunBefore = new Set<object>();
  const seen = new Set<object>();
  for (const report of reports) {
    if (!report.unit) continue;
    if (isLimiter(report.text)) limiterUnits.add(report.unit);
    if (!seen.has(report.unit) && report.window !== counted) unitsBegunBefore.add(report.unit);
    seen.add(report.unit);
  }
  return reports.filter((report) => report.window === counted && (report.unit ? !limiterUnits.has(report.unit) && !unitsBegunBefore.has(report.unit) : !isLimiter(report.text)));
}

/**
 * The request limiter's statements (its counters' upsert and their cleanup), not the account's write budget (the
 * spending that names several budgets and returns their keys: docs/decisions/0045), which every write pays for.
 */
const isLimiter = (text: string) => text.includes('"RateLimit"') && !text.includes('RETURNING "key", "count", "windowEndsAt"');

async function counted<T>(step: () => Promise<T>): Promise<{ result: T; statements: string[]; writes: number }> {
  const counted = (window = ++windows);
  let result: T;
  try {
    result = await step();
  } finally {
    window = undefined;
  }
  const kept = stepStatements(recorded, counted);
  // A write to PostgreSQL: a statement that leaves at once, with those sent ahead of it (statement-reports.ts).
  return { result, statements: kept.map((report) => report.text), writes: kept.filter((report) => !report.sentAhead).length };
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
 * head's swap with the app's activity counters written in it (one statement, docs/decisions/0053), the new blocks,
 * the record, the removed blocks, the sequencer's lock, the event, COMMIT (12). On SQLite the locks are BEGIN IMMEDIATE's, the write
 * budget's statement is a transaction of three, the counters are an upsert of their own, and the jti is at most a transaction of four (BEGIN, its cleanup, its
 * insert, COMMIT; the insert alone on three requests in four, docs/decisions/0039): at most 16. And on one commit of
 * the four, the three prunes (events, blobs, expired activity days).
 */
const CREATE_RECORD_LIMIT = {
  postgresql: COMMITS_PER_CLEANUP * 12 + 3,
  sqlite: COMMITS_PER_CLEANUP * 16 + 3,
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
  const counts: Record<string, string[]> = {};
  let createRecordWrites = 0;

  beforeAll(async () => {
    diagnostics_channel.subscribe(STATEMENT_CHANNEL, record);
    database = await createServerDatabase();
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
    diagnostics_channel.unsubscribe(STATEMENT_CHANNEL, record);
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
    // None would mean the driver no longer reports what it writes.
    expect(createRecordWrites).toBeGreaterThan(0);
    expect(createRecordWrites).toBeLessThanOrEqual(CREATE_RECORD_WRITES);
  });
});
