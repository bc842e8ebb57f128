import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { CookieJar, openConsentPage, submitConsent } from "../helpers/consent.ts";
import { rowOf } from "../helpers/databases.ts";
import {
  ALICE,
  authorizeAndGetCode,
  createAlice,
  createDpopProof,
  createPkce,
  fetchNonce,
  newClient,
  obtainTokens,
  rawGet,
  SCOPE,
  type TokenSet,
} from "../helpers/flow.ts";
import type { DpopClient } from "../../scripts/lib/dpop-client.ts";
import { startBehindNginx, type ProxiedServers } from "../helpers/nginx.ts";

/**
 * Three server processes on one database — a PostgreSQL database in the
 * postgresql project, one SQLite file in the sqlite project — behind nginx
 * (round-robin), as a deployment with several machines runs them. Requests
 * of one client land on all three in turn. Every single-use step has exactly
 * one winner across processes, a DPoP nonce from one is good at the others,
 * the sign-in throttle counts attempts made at all three together, and
 * killing one process (SIGKILL) under load loses nothing another already
 * acknowledged.
 */

const PROCESSES = 3;

/** A new client's pushed request, its consent screen opened in a fresh browser (cookie jar). */
async function consentScreen() {
  const authorizeUrl = await pushedRequest(await newClient(server()));
  const jar = new CookieJar();
  return { authorizeUrl, jar, page: await openConsentPage(authorizeUrl, jar) };
}

/** A pushed request's authorize URL (the screen) for `client`. */
async function pushedRequest(client: DpopClient): Promise<string> {
  const par = await client.pushAuthorizationRequest({
    redirect_uri: "http://127.0.0.1:54321/callback",
    scope: SCOPE,
    state: "s",
    code_challenge: createPkce().challenge,
    code_challenge_method: "S256",
  });
  if (par.status !== 201) throw new Error(`PAR failed (${par.status})`);
  return client.authorizeUrl(par.body.request_uri);
}

let proxied: ProxiedServers;
const server = () => proxied.servers[0]!;

describe("three processes on one database behind nginx", () => {
  beforeAll(async () => {
    proxied = await startBehindNginx(PROCESSES, {
      ATRIUM_TRUST_PROXY: "1",
      // Once the free attempts are used, the next waits a minute: however slowly a loaded machine sends the 20
      // simultaneous guesses, none can come after the wait is over.
      ATRIUM_SIGN_IN_FIRST_WAIT_SECONDS: "60",
      ATRIUM_RATE_LIMIT_TOKEN_PER_MINUTE: "100000",
      ATRIUM_RATE_LIMIT_PAR_PER_MINUTE: "100000",
      ATRIUM_RATE_LIMIT_XRPC_PER_MINUTE: "100000",
      ATRIUM_RATE_LIMIT_SCREEN_PER_MINUTE: "100000",
    });
    await createAlice(proxied.servers[0]!);
  });
  afterAll(() => proxied?.stop());


  it("a DPoP nonce one process issued is accepted by the others", async () => {
    const client = await newClient(server());
    const { tokens } = await obtainTokens(server(), client);
    // One nonce, then proofs carrying it on requests that round-robin sends to every process, without the
    // client's retry: any process that did not know the nonce would answer 401 use_dpop_nonce.
    const nonce = await fetchNonce(server());
    const url = `${proxied.issuer}/oauth/userinfo`;
    const statuses = [];
    for (let i = 0; i < PROCESSES * 2; i++) {
      const proof = await createDpopProof(client.key, { method: "GET", url, nonce, accessToken: tokens.access_token });
      statuses.push((await rawGet(url, { Authorization: `DPoP ${tokens.access_token}`, DPoP: proof })).status);
    }
    expect(statuses).toEqual(Array(PROCESSES * 2).fill(200));
  });

  it("30 parallel exchanges of one code, spread over the three: exactly one 200", async () => {
    const client = await newClient(server());
    const authorized = await authorizeAndGetCode(server(), client);
    const results = await Promise.all(Array.from({ length: 30 }, () => client.exchangeCode(authorized.code, authorized.verifier, authorized.redirectUri)));
    expect(results.filter((result) => result.status === 200)).toHaveLength(1);
    expect(results.filter((result) => result.status === 400)).toHaveLength(29);
  });

  it("30 parallel refreshes of one refresh token, spread over the three: exactly one 200", async () => {
    const client = await newClient(server());
    const { tokens } = await obtainTokens(server(), client);
    const results = await Promise.all(Array.from({ length: 30 }, () => client.refresh(tokens.refresh_token)));
    expect(results.filter((result) => result.status === 200)).toHaveLength(1);
  });

  it("20 parallel answers to one consent screen, spread over the three: exactly one code", async () => {
    const { authorizeUrl, jar, page } = await consentScreen();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => submitConsent(authorizeUrl, jar, { decision: "allow", identifier: ALICE.handle, password: ALICE.password, csrfToken: page.csrfToken })),
    );
    const codes = answers.map((answer) => new URL(answer.headers.get("location") ?? "http://x/").searchParams.get("code")).filter(Boolean);
    expect(codes).toHaveLength(1);
  });

  it("20 simultaneous wrong passwords for one account, spread over the three: only the free attempts are checked", async () => {
    const { authorizeUrl, jar, page } = await consentScreen();
    // Each from its own (forged, but trusted-proxy-appended) address, so only the account's counter can stop them.
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        submitConsent(authorizeUrl, jar, {
          decision: "allow",
          identifier: "bob.test",
          password: `wrong-${i}`,
          csrfToken: page.csrfToken,
          headers: { "X-Forwarded-For": `198.51.100.${i + 1}` },
        }),
      ),
    );
    // The identifier names no account: it gets a counter of its own, limited exactly like an account's.
    const checked = answers.filter((answer) => answer.status === 400).length;
    const throttled = answers.filter((answer) => answer.status === 429).length;
    expect(checked).toBe(5);
    expect(throttled).toBe(15);
  });

  it("SIGKILL of one process under load loses nothing the others acknowledged", async () => {
    const startedAt = Date.now();
    const acknowledged: { client: Awaited<ReturnType<typeof newClient>>; tokens: TokenSet }[] = [];
    // Counts, not time windows (a loaded machine is slower): the kill comes after a few acknowledged flows, and the
    // load goes on until the survivors have acknowledged as many again.
    const BEFORE_KILL = 4;
    const AFTER_KILL = 4;
    let killedAfter: number | undefined;
    let stop = false;
    const victim = proxied.servers[1]!;
    const worker = async () => {
      while (!stop) {
        const client = await newClient(server());
        try {
          const { tokens } = await obtainTokens(server(), client);
          acknowledged.push({ client, tokens });
        } catch {
          // A request cut off by the kill: nothing was acknowledged, nothing is owed.
        }
        if (killedAfter === undefined && acknowledged.length >= BEFORE_KILL) {
          killedAfter = acknowledged.length;
          process.kill(victim.pid, "SIGKILL");
        }
        if (killedAfter !== undefined && acknowledged.length >= killedAfter + AFTER_KILL) stop = true;
      }
    };
    await Promise.all(Array.from({ length: 4 }, worker));

    expect(acknowledged.length).toBeGreaterThanOrEqual(BEFORE_KILL + AFTER_KILL);
    // Every token the server acknowledged works at the survivors (nginx passes over the dead upstream).
    for (const { client, tokens } of acknowledged) {
      const answer = await client.userinfo(tokens.access_token);
      expect(answer.status).toBe(200);
    }
    // No half-written grant: each grant has its first tokens, each code that made one points at it.
    const db = proxied.servers[0]!.database();
    const orphans = await rowOf<{ n: number }>(db, sql`SELECT COUNT(*) AS "n" FROM "Grant" g WHERE NOT EXISTS (SELECT 1 FROM "RefreshToken" r WHERE r."grantId" = g."id")`);
    expect(orphans!.n).toBe(0);
    const dangling = await rowOf<{ n: number }>(
      db,
      sql`SELECT COUNT(*) AS "n" FROM "AuthorizationCode" c
        WHERE c."createdAt" >= ${at(startedAt)} AND c."usedAt" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "Grant" g WHERE g."id" = c."grantId")`,
    );
    expect(dangling!.n).toBe(0);
  });
});
