/**
 * Races and process faults:
 * (a) parallel attempts on single-use items: exactly one wins;
 * (b) SIGKILL under load: after a restart on the same database every
 *     acknowledged token still works and no grant is half-written;
 * (c) SIGTERM: in-flight requests finish with their normal answer, new
 *     connections are refused, the process exits with 0.
 */
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql, type Database, type Statement } from "../../app/.server/db/sql.ts";
import { createDpopProof, DpopClient, generateDpopKey, sha256Base64url, type TokenSet } from "../../scripts/lib/dpop-client.ts";
import { openConsentPage, submitConsent } from "../helpers/consent.ts";
import { rowOf, rowsOf } from "../helpers/databases.ts";
import { ALICE, CLIENT_ID, createAlice, createPkce, fetchNonce, parForm, rawPost, SCOPE, type OAuthErrorBody } from "../helpers/flow.ts";
import { startProcessServer, type ProcessServer } from "../helpers/process-server.ts";
import { approveInBrowser, grantFor, manyGrants, newBrowser, type GrantSession } from "../helpers/session-grants.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";

/** Load from one address must not trip the per-address request limits (they have their own tests). */
const NO_REQUEST_LIMITS = {
  ATRIUM_RATE_LIMIT_PAR_PER_MINUTE: "1000000",
  ATRIUM_RATE_LIMIT_TOKEN_PER_MINUTE: "1000000",
  ATRIUM_RATE_LIMIT_XRPC_PER_MINUTE: "10000000",
  ATRIUM_RATE_LIMIT_SCREEN_PER_MINUTE: "1000000",
};

/** The `n` of a `SELECT COUNT(*) AS "n"` statement. */
const count = async (db: Database, statement: Statement) => (await rowOf<{ n: number }>(db, statement))!.n;

describe("(a) parallel attempts on single-use items", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer(NO_REQUEST_LIMITS);
    await createAlice(server);
  });
  afterAll(() => server?.stop());

  it("the same request_uri approved by 10 parallel consent posts (one signed-in browser, one CSRF token): exactly one 303 with a code", async () => {
    const browser = newBrowser();
    await grantFor(server.issuer, browser); // signs in; the session stays in the jar
    const client = new DpopClient(server.issuer, await generateDpopKey(), CLIENT_ID);
    const pkce = createPkce();
    const par = await client.pushAuthorizationRequest({
      redirect_uri: "http://127.0.0.1:54321/callback",
      scope: SCOPE,
      state: "race-state",
      code_challenge: pkce.challenge,
      code_challenge_method: "S256",
    });
    expect(par.status).toBe(201);
    const authorizeUrl = client.authorizeUrl(par.body.request_uri);
    const page = await openConsentPage(authorizeUrl, browser.jar);
    expect(page.status).toBe(200);
    const codesBefore = await count(server.database(), sql`SELECT COUNT(*) AS "n" FROM "AuthorizationCode"`);

    const responses = await Promise.all(
      Array.from({ length: 10 }, () => submitConsent(authorizeUrl, browser.jar, { decision: "allow", csrfToken: page.csrfToken })),
    );
    const outcomes = await Promise.all(responses.map(async (r) => ({ status: r.status, location: r.headers.get("location"), body: r.status === 303 ? "" : (await r.text()).slice(0, 120) })));
    const winners = outcomes.filter((o) => o.status === 303 && o.location && new URL(o.location).searchParams.has("code"));
    expect(winners, JSON.stringify(outcomes.map((o) => o.status))).toHaveLength(1);
    // Every other post finds the request answered: back to the app with access_denied, never a second code (docs/decisions/0020).
    for (const loser of outcomes.filter((o) => o !== winners[0])) {
      expect(loser.status, JSON.stringify(loser)).toBe(303);
      expect(new URL(loser.location!).searchParams.get("error"), JSON.stringify(loser)).toBe("access_denied");
      expect(new URL(loser.location!).searchParams.has("code"), JSON.stringify(loser)).toBe(false);
    }
    expect(await count(server.database(), sql`SELECT COUNT(*) AS "n" FROM "AuthorizationCode"`)).toBe(codesBefore + 1);
    const code = new URL(winners[0]!.location!).searchParams.get("code")!;
    expect((await client.exchangeCode(code, pkce.verifier, "http://127.0.0.1:54321/callback")).status).toBe(200);
  });

  it("the same request_uri allowed with a password by 10 parallel posts (double-click while signing in): exactly one 303 with a code", async () => {
    const client = new DpopClient(server.issuer, await generateDpopKey(), CLIENT_ID);
    const pkce = createPkce();
    const par = await client.pushAuthorizationRequest({
      redirect_uri: "http://127.0.0.1:54321/callback",
      scope: SCOPE,
      state: "race-password",
      code_challenge: pkce.challenge,
      code_challenge_method: "S256",
    });
    expect(par.status).toBe(201);
    const browser = newBrowser();
    const authorizeUrl = client.authorizeUrl(par.body.request_uri);
    const page = await openConsentPage(authorizeUrl, browser.jar);
    const responses = await Promise.all(
      Array.from({ length: 10 }, () =>
        submitConsent(authorizeUrl, browser.jar, { decision: "allow", identifier: ALICE.handle, password: ALICE.password, csrfToken: page.csrfToken }),
      ),
    );
    const statuses = responses.map((r) => r.status);
    const winners = responses.filter((r) => r.status === 303 && new URL(r.headers.get("location")!).searchParams.has("code"));
    expect(winners, JSON.stringify(statuses)).toHaveLength(1);
    expect(statuses.filter((s) => s >= 500), JSON.stringify(statuses)).toEqual([]);
  });

  it("the same DPoP proof (same jti) in 10 parallel PAR requests: exactly one 201, the rest invalid_dpop_proof", async () => {
    const key = await generateDpopKey();
    const url = `${server.issuer}/oauth/par`;
    const proof = await createDpopProof(key, { method: "POST", url, nonce: await fetchNonce(server) });
    const form = parForm();
    const before = await count(server.database(), sql`SELECT COUNT(*) AS "n" FROM "AuthorizationRequest"`);
    const results = await Promise.all(Array.from({ length: 10 }, () => rawPost(url, form, proof)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201), JSON.stringify(statuses)).toHaveLength(1);
    for (const result of results.filter((r) => r.status !== 201)) {
      expect({ status: result.status, error: (result.body as OAuthErrorBody).error }).toEqual({ status: 400, error: "invalid_dpop_proof" });
    }
    expect(await count(server.database(), sql`SELECT COUNT(*) AS "n" FROM "AuthorizationRequest"`)).toBe(before + 1);
  });

  it("the same authorization code exchanged by 10 parallel requests (distinct proofs): exactly one 200", async () => {
    const client = new DpopClient(server.issuer, await generateDpopKey(), CLIENT_ID);
    const browser = newBrowser();
    const { code, verifier, redirectUri } = await approveInBrowser(server.issuer, client, browser);
    client.nonce = await fetchNonce(server);
    const grantsBefore = await count(server.database(), sql`SELECT COUNT(*) AS "n" FROM "Grant"`);
    const results = await Promise.all(Array.from({ length: 10 }, () => client.exchangeCode(code, verifier, redirectUri)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200), JSON.stringify(statuses)).toHaveLength(1);
    for (const result of results.filter((r) => r.status !== 200)) {
      expect({ status: result.status, error: (result.body as OAuthErrorBody).error }).toEqual({ status: 400, error: "invalid_grant" });
    }
    // At most the one grant (a replay of a used code may revoke it again: docs/architecture.md, "Tokens and codes").
    expect(await count(server.database(), sql`SELECT COUNT(*) AS "n" FROM "Grant"`)).toBeLessThanOrEqual(grantsBefore + 1);
  });

  it("the same refresh token used by 10 parallel requests (distinct proofs): exactly one 200, the rest invalid_grant", async () => {
    const [session] = await manyGrants(server.issuer, 1);
    session!.client.nonce = await fetchNonce(server);
    const results = await Promise.all(Array.from({ length: 10 }, () => session!.client.refresh(session!.tokens.refresh_token)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200), JSON.stringify(statuses)).toHaveLength(1);
    for (const result of results.filter((r) => r.status !== 200)) {
      expect({ status: result.status, error: (result.body as OAuthErrorBody).error }).toEqual({ status: 400, error: "invalid_grant" });
    }
  });
});

/** Per Grant: live refresh tokens (unused) and access tokens; plus rows whose grant is gone. */
async function grantShape(db: Database) {
  const grants = await rowsOf<{ id: string; liveRefresh: number; access: number }>(
    db,
    sql`SELECT g."id" AS "id",
          (SELECT COUNT(*) FROM "RefreshToken" r WHERE r."grantId" = g."id" AND r."usedAt" IS NULL) AS "liveRefresh",
          (SELECT COUNT(*) FROM "AccessToken" a WHERE a."grantId" = g."id") AS "access"
        FROM "Grant" g`,
  );
  const orphans =
    (await count(db, sql`SELECT COUNT(*) AS "n" FROM "RefreshToken" WHERE "grantId" NOT IN (SELECT "id" FROM "Grant")`)) +
    (await count(db, sql`SELECT COUNT(*) AS "n" FROM "AccessToken" WHERE "grantId" NOT IN (SELECT "id" FROM "Grant")`));
  return { grants, orphans };
}

type Worker = {
  session: GrantSession;
  /** Every token set this worker received (in order); the last is current. */
  issued: TokenSet[];
  /** A refresh whose answer never arrived (the process died under it). */
  refreshInDoubt: boolean;
  refreshes: number;
  reads: number;
  stoppedBy?: string;
};

describe("(b) SIGKILL under load, then a restart on the same database and port", () => {
  let server: ProcessServer;

  beforeAll(async () => {
    server = await startProcessServer(NO_REQUEST_LIMITS);
    await createAccount(server, ALICE);
  });
  afterAll(() => server?.stop());

  it("keeps every acknowledged token usable and leaves no half-written grant", async () => {
    const sessions = await manyGrants(server.issuer, 6);
    const workers: Worker[] = sessions.map((session) => ({ session, issued: [session.tokens], refreshInDoubt: false, refreshes: 0, reads: 0 }));
    let stop = false;
    // The kill comes once every worker has completed a few refreshes (a count, not a time: a loaded machine is slower).
    let loaded!: () => void;
    const underLoad = new Promise<void>((resolve) => (loaded = resolve));

    const run = async (worker: Worker) => {
      while (!stop) {
        const current = worker.issued.at(-1)!;
        try {
          worker.refreshInDoubt = true;
          const refreshed = await worker.session.client.refresh(current.refresh_token);
          worker.refreshInDoubt = false;
          if (refreshed.status !== 200) throw new Error(`refresh answered ${refreshed.status} ${JSON.stringify(refreshed.body)}`);
          worker.issued.push(refreshed.body);
          worker.refreshes++;
          if (workers.every((each) => each.refreshes >= 3)) loaded();
          const read = await worker.session.client.xrpc(refreshed.body.access_token, "com.atproto.server.getSession");
          if (read.status !== 200) throw new Error(`getSession answered ${read.status} ${JSON.stringify(read.body)}`);
          worker.reads++;
        } catch (error) {
          worker.stoppedBy = String((error as { cause?: { code?: string } }).cause?.code ?? error);
          return;
        }
      }
    };

    const running = Promise.all(workers.map(run));
    // A worker that failed before the kill ends the wait too; the assertions below then say what it met.
    await Promise.race([underLoad, running]);
    server.signal("SIGKILL");
    const exit = await server.exited();
    stop = true;
    await running;
    expect(exit.signal).toBe("SIGKILL");

    const summary = workers.map((w) => ({ refreshes: w.refreshes, reads: w.reads, inDoubt: w.refreshInDoubt, stoppedBy: w.stoppedBy }));
    console.log("SIGKILL run:", JSON.stringify(summary));
    // The load really was running when the process died: every worker did work and was cut off by the kill.
    for (const worker of workers) {
      expect(worker.refreshes, JSON.stringify(summary)).toBeGreaterThan(0);
      expect(worker.stoppedBy, JSON.stringify(summary)).toBeDefined();
    }

    await server.restart();
    // The file itself survived the kill intact, foreign keys included: SQLite only, since it is the SQLite file's own
    // check (PostgreSQL recovers from its write-ahead log and enforces foreign keys on every write; the orphan counts
    // below check the token tables on both engines).
    if (server.databasePath !== undefined) {
      const file = server.db();
      expect(file.pragma("integrity_check", { simple: true })).toBe("ok");
      expect(file.pragma("foreign_key_check")).toEqual([]);
    }
    const db = server.database();
    const shape = await grantShape(db);
    expect(shape.orphans).toBe(0);
    expect(shape.grants.length).toBeGreaterThanOrEqual(workers.length);
    for (const grant of shape.grants) {
      expect({ grant: grant.id, liveRefresh: grant.liveRefresh, accessAtMostOne: grant.access <= 1 }).toEqual({ grant: grant.id, liveRefresh: 1, accessAtMostOne: true });
    }

    let lostInTransit = 0;
    for (const [index, worker] of workers.entries()) {
      const latest = worker.issued.at(-1)!;
      const row = await rowOf<{ usedAt: number | null }>(db, sql`SELECT "usedAt" FROM "RefreshToken" WHERE "tokenHash" = ${sha256Base64url(latest.refresh_token)}`);
      expect(row, `worker ${index}: its latest refresh token is in the database`).toBeDefined();
      if (row!.usedAt !== null) {
        // The rotation committed but its answer died with the process: only possible for a refresh in flight at the kill.
        expect(worker.refreshInDoubt, `worker ${index}: latest refresh token spent without an in-flight refresh`).toBe(true);
        lostInTransit++;
        continue;
      }
      // Not superseded: the latest access token is accepted, the latest refresh token refreshes.
      const info = await worker.session.client.userinfo(latest.access_token);
      expect({ worker: index, status: info.status }).toEqual({ worker: index, status: 200 });
      const read = await worker.session.client.xrpc(latest.access_token, "com.atproto.server.getSession");
      expect({ worker: index, status: read.status }).toEqual({ worker: index, status: 200 });
      const refreshed = await worker.session.client.refresh(latest.refresh_token);
      expect({ worker: index, status: refreshed.status }).toEqual({ worker: index, status: 200 });
      expect((await worker.session.client.userinfo(refreshed.body.access_token)).status).toBe(200);
    }
    // Superseded access tokens stay dead after the restart (one live access token per grant).
    for (const worker of workers) {
      const superseded = worker.issued.at(-2);
      if (superseded) expect((await worker.session.client.userinfo(superseded.access_token)).status).toBe(401);
    }
    console.log(`SIGKILL: ${workers.length} grants, ${lostInTransit} refresh(es) committed but unanswered at the kill`);

    const after = await grantShape(server.database());
    expect(after.orphans).toBe(0);
    for (const grant of after.grants) expect({ grant: grant.id, liveRefresh: grant.liveRefresh, access: grant.access <= 1 }).toEqual({ grant: grant.id, liveRefresh: 1, access: true });
  });
});

describe("(c) SIGTERM drains in-flight requests", () => {
  let server: ProcessServer;
  let host: http.Server;
  let hostOrigin: string;
  let metadataRequested: () => void;
  const requested = new Promise<void>((resolve) => (metadataRequested = resolve));
  // The client document is held back until the test lets it go: the PAR is in flight for as long as the test needs.
  let releaseMetadata!: () => void;
  const released = new Promise<void>((resolve) => (releaseMetadata = resolve));

  beforeAll(async () => {
    server = await startProcessServer(NO_REQUEST_LIMITS);
    host = http.createServer((req, res) => {
      const clientId = `${hostOrigin}/slow-client.json`;
      metadataRequested();
      void released.then(() => {
        res.writeHead(200, { "Content-Type": "application/json" }).end(
          JSON.stringify({
            client_id: clientId,
            client_name: "Slow App",
            dpop_bound_access_tokens: true,
            redirect_uris: [`${hostOrigin}/callback`],
            scope: SCOPE,
            grant_types: ["authorization_code", "refresh_token"],
            response_types: ["code"],
            application_type: "web",
            token_endpoint_auth_method: "none",
          }),
        );
      });
      void req;
    });
    await new Promise<void>((resolve) => host.listen(0, "127.0.0.1", () => resolve()));
    hostOrigin = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    host?.closeAllConnections();
    await new Promise<void>((resolve) => host?.close(() => resolve()));
    await server?.stop();
  });

  it("finishes the in-flight PAR with its normal 201, refuses new connections, then exits with 0", async () => {
    const client = new DpopClient(server.issuer, await generateDpopKey(), `${hostOrigin}/slow-client.json`);
    // Prime the nonce (this request fails validation before the client document is fetched).
    await client.pushAuthorizationRequest({});
    const pkce = createPkce();
    let answeredAt = 0;
    const inFlight = client
      .pushAuthorizationRequest({
        redirect_uri: `${hostOrigin}/callback`,
        scope: SCOPE,
        state: "drain-state",
        code_challenge: pkce.challenge,
        code_challenge_method: "S256",
      })
      .then((result) => {
        answeredAt = performance.now();
        return result;
      });
    await requested; // the server is now waiting on the slow metadata host
    // The server logs "SIGTERM received" in the same step as it closes its listening socket.
    const stopping = new Promise<void>((resolve) => {
      const check = () => {
        if (!server.output().includes("SIGTERM received")) return;
        server.child.stdout?.off("data", check);
        resolve();
      };
      server.child.stdout?.on("data", check);
    });
    server.signal("SIGTERM");
    let exitedAt = 0;
    const exit = server.exited().then((value) => {
      exitedAt = performance.now();
      return value;
    });

    // A new connection after SIGTERM is refused (the listening socket is closed at once).
    await stopping;
    const connect = await new Promise<string>((resolve) => {
      const socket = net.connect(server.port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve("connected");
      });
      socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
    expect(connect).toBe("ECONNREFUSED");
    expect(answeredAt, "the in-flight request was still pending when the new connection was tried").toBe(0);
    releaseMetadata();

    const result = await inFlight;
    expect({ status: result.status, hasRequestUri: typeof (result.body as { request_uri?: unknown }).request_uri === "string" }).toEqual({
      status: 201,
      hasRequestUri: true,
    });
    const { code, signal } = await exit;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    // Exit follows the drain, not the 10 s safety timer nor the 5 s keep-alive timeout: the connection that carried
    // the in-flight answer is closed as soon as it turns idle. (The one bound in time here is those timers', which
    // the server's own code sets; a drain that waited for either would take at least 5 s.)
    const lag = Math.round(exitedAt - answeredAt);
    console.log(`SIGTERM: exit ${lag} ms after the in-flight answer`);
    expect(lag, `exited ${lag} ms after the last answer`).toBeLessThan(5_000);
    expect(server.output()).toContain("SIGTERM received");
  });
});
