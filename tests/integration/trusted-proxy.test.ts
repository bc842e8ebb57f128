import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { createPkce, DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { CookieJar, openConsentPage, visibleText } from "../helpers/consent.ts";
import { rowsOf } from "../helpers/databases.ts";
import { CLIENT_ID, parForm } from "../helpers/flow.ts";
import { startBehindNginx, type ProxiedServers } from "../helpers/nginx.ts";
import { fetchFrom, type SourceFetch } from "../helpers/raw-http.ts";

/**
 * docs/decisions/0006: behind a reverse proxy, per-address limits count the
 * address the trusted proxy appended to X-Forwarded-For, never what the
 * client wrote there itself. Attacked as an attacker would: many requests at
 * once, each with a different forged X-Forwarded-For, through a real nginx
 * balancing over two Atrium processes that share one database. The attacker
 * and a bystander connect from their own loopback addresses (127.0.0.2,
 * 127.0.0.3, …), so nginx names each of them truthfully.
 */

const ATTACKS = 20;

/** A different lie per request (no two alike): addresses, chains, IPv6, and chains that claim to have passed the proxy already. */
function forgedForwardedFor(i: number): string {
  const forms = [
    () => `203.0.113.${i + 1}`,
    () => `198.51.100.${i + 1}, 192.0.2.${i + 1}`,
    () => `2001:db8::${(i + 1).toString(16)}`,
    () => `198.18.0.${i + 1}, 127.0.0.1`,
    () => `10.${i}.0.1, 127.0.0.1`,
  ];
  return forms[i % forms.length]!();
}

function parFrom(client: SourceFetch, issuer: string, forwardedFor?: string) {
  const headers: Record<string, string> = { "Content-Type": "application/x-www-form-urlencoded" };
  if (forwardedFor !== undefined) headers["X-Forwarded-For"] = forwardedFor;
  // No DPoP proof: refused with 400 after the limit has counted it, 429 once over the limit.
  return client(`${issuer}/oauth/par`, { method: "POST", headers, body: "client_id=x" });
}

/** `count` PARs at once from `client` to `target`, each with its own forged X-Forwarded-For; their statuses and Retry-After values. */
async function parallelForgedPars(client: SourceFetch, target: string, count = ATTACKS) {
  const responses = await Promise.all(Array.from({ length: count }, (_, i) => parFrom(client, target, forgedForwardedFor(i))));
  await Promise.all(responses.map((response) => response.arrayBuffer()));
  return {
    statuses: responses.map((response) => response.status),
    retryAfters: responses.filter((response) => response.status === 429).map((response) => Number(response.headers.get("retry-after"))),
  };
}

const count = (statuses: number[], status: number) => statuses.filter((candidate) => candidate === status).length;

/** PAR limit 3: every hit is decided by the shared database (below half the limit nothing is kept in memory), so the count is exact across processes. */
const PAR_LIMIT = 3;

describe.each([
  ["one trusted hop (ATRIUM_TRUST_PROXY=1)", "1"],
  ["trusted by address (ATRIUM_TRUST_PROXY=127.0.0.1/32)", "127.0.0.1/32"],
])("behind nginx with %s, two processes on one database", (_name, trust) => {
  let proxied: ProxiedServers;
  beforeAll(async () => {
    proxied = await startBehindNginx(2, { ATRIUM_TRUST_PROXY: trust, ATRIUM_RATE_LIMIT_PAR_PER_MINUTE: String(PAR_LIMIT), ATRIUM_LOG_REQUESTS: "1" });
  });
  afterAll(() => proxied?.stop());

  it(`${ATTACKS} parallel PARs with forged X-Forwarded-For are limited by the attacker's real address, on both processes`, async () => {
    const { statuses, retryAfters } = await parallelForgedPars(fetchFrom("127.0.0.2"), proxied.issuer);
    expect(count(statuses, 400)).toBe(PAR_LIMIT);
    expect(count(statuses, 429)).toBe(ATTACKS - PAR_LIMIT);
    for (const seconds of retryAfters) expect(seconds).toBeGreaterThan(0);
    // nginx spread the attack over both processes; they shared one count.
    for (const server of proxied.servers) expect(await server.printed(/"method":"POST","path":"\/oauth\/par","route":"\/oauth\/par","status":(400|429)/)).toBeTruthy();
  });

  it("a bystander behind the same proxy keeps its own allowance", async () => {
    const bystander = fetchFrom("127.0.0.3");
    const statuses = [];
    for (let i = 0; i < PAR_LIMIT; i++) statuses.push((await parFrom(bystander, proxied.issuer)).status);
    expect(statuses).toEqual(Array(PAR_LIMIT).fill(400));
    expect((await parFrom(bystander, proxied.issuer)).status).toBe(429);
  });
});

describe("trusted by address, reached directly (ATRIUM_TRUST_PROXY=127.0.0.1/32)", () => {
  let proxied: ProxiedServers;
  beforeAll(async () => {
    proxied = await startBehindNginx(2, { ATRIUM_TRUST_PROXY: "127.0.0.1/32", ATRIUM_RATE_LIMIT_PAR_PER_MINUTE: String(PAR_LIMIT) });
  });
  afterAll(() => proxied?.stop());

  it("a request that does not come from a trusted proxy has its X-Forwarded-For ignored, even one naming the proxy", async () => {
    // The attacker skips nginx and talks to both processes at once, claiming to be the proxy or anyone else, and in
    // the same burst sends one request through nginx: the same address, so all of them share one allowance. (In one
    // burst, not after it: the limit's window is a minute of the servers' real time.)
    const attacker = fetchFrom("127.0.0.4");
    const [first, second] = proxied.servers.map((server) => `http://127.0.0.1:${server.port}`);
    const [direct1, direct2, throughNginx] = await Promise.all([
      parallelForgedPars(attacker, first!, ATTACKS / 2),
      parallelForgedPars(attacker, second!, ATTACKS / 2),
      parallelForgedPars(attacker, proxied.issuer, 1),
    ]);
    const statuses = [direct1!, direct2!, throughNginx!].flatMap((result) => result.statuses);
    expect(count(statuses, 400)).toBe(PAR_LIMIT);
    expect(count(statuses, 429)).toBe(ATTACKS + 1 - PAR_LIMIT);
  });
});

describe("the sign-in throttle behind nginx (ATRIUM_TRUST_PROXY=1), two processes on one database", () => {
  let proxied: ProxiedServers;
  beforeAll(async () => {
    proxied = await startBehindNginx(2, { ATRIUM_TRUST_PROXY: "1", ATRIUM_SIGN_IN_FREE_ATTEMPTS: "2" });
  });
  afterAll(() => proxied?.stop());

  /** A consent screen waiting for a sign-in, opened through nginx from 127.0.0.1. */
  async function pendingConsent() {
    const client = new DpopClient(proxied.issuer, await generateDpopKey(), CLIENT_ID);
    const par = await client.pushAuthorizationRequest(parForm({ client_id: undefined, response_type: undefined, code_challenge: createPkce().challenge }));
    expect(par.status).toBe(201);
    const url = new URL(client.authorizeUrl(par.body.request_uri));
    const jar = new CookieJar();
    const page = await openConsentPage(url.href, jar);
    expect(page.csrfToken).toBeDefined();
    return { url, jar, csrfToken: page.csrfToken! };
  }

  /** A wrong password for `identifier` on a consent screen, posted through nginx from `client`, claiming `forwardedFor`. */
  async function guess(client: SourceFetch, identifier: string, forwardedFor: string) {
    const { url, jar, csrfToken } = await pendingConsent();
    const form = new URLSearchParams({
      csrf_token: csrfToken,
      request_uri: url.searchParams.get("request_uri")!,
      client_id: url.searchParams.get("client_id")!,
      decision: "allow",
      identifier,
      password: "a guess",
    });
    const response = await client(url.href, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", cookie: jar.header(), origin: proxied.issuer, "X-Forwarded-For": forwardedFor },
      body: form.toString(),
      redirect: "manual",
    });
    return { status: response.status, text: visibleText(await response.text()) };
  }

  it("guesses across many accounts, each claiming another address, are throttled by the real address", async () => {
    const attacker = fetchFrom("127.0.0.2");
    const answers: { status: number; text: string }[] = [];
    // Batches of parallel guesses until the throttle answers: the first batch alone already passes the free attempts.
    for (let batch = 0; batch < 4 && !answers.some((answer) => answer.status === 429); batch++) {
      const guesses = Array.from({ length: 6 }, (_, i) => guess(attacker, `nobody-${batch}-${i}.test`, forgedForwardedFor(batch * 6 + i)));
      answers.push(...(await Promise.all(guesses)));
    }
    expect(answers.every((answer) => answer.status === 400 || answer.status === 429)).toBe(true);
    const throttled = answers.find((answer) => answer.status === 429);
    expect(throttled, `no guess of ${answers.length} was throttled`).toBeDefined();
    expect(throttled!.text).toContain("Too many sign-in attempts");

    // Someone else behind the same proxy is not throttled by the attacker's failures.
    expect((await guess(fetchFrom("127.0.0.3"), "nobody-else.test", "203.0.113.7")).status).toBe(400);

    // Failures were remembered under the real addresses only, never under a forged one.
    const rows = await rowsOf<{ key: string }>(proxied.servers[0]!.database(), sql`SELECT "key" FROM "RateLimit" WHERE "key" LIKE 'sign-in:address:%' ORDER BY "key"`);
    expect(rows.map((row) => row.key)).toEqual(["sign-in:address:127.0.0.2", "sign-in:address:127.0.0.3"]);
  });
});
