import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BYTEWISE, sql } from "../../app/.server/db/sql.ts";
import { createPkce, DpopClient, generateDpopKey, sha256Base64url } from "../../scripts/lib/dpop-client.ts";
import { CookieJar, openConsentPage, submitConsent } from "../helpers/consent.ts";
import { rowOf, rowsOf } from "../helpers/databases.ts";
import { ALICE, CLIENT_ID, createAlice, parForm } from "../helpers/flow.ts";
import { testClock } from "../helpers/test-clock.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";

/** Abuse limits (docs/architecture.md, "Abuse limits"): sign-in throttling, per-address request limits, body limits, timeouts. */

async function pendingConsent(server: TestServer) {
  const client = new DpopClient(server.issuer, await generateDpopKey(), CLIENT_ID);
  const par = await client.pushAuthorizationRequest(parForm({ client_id: undefined, response_type: undefined, code_challenge: createPkce().challenge }));
  expect(par.status).toBe(201);
  const url = client.authorizeUrl(par.body.request_uri);
  const jar = new CookieJar();
  const page = await openConsentPage(url, jar);
  return { url, jar, csrfToken: page.csrfToken! };
}

async function attempt(server: TestServer, identifier: string, password: string, headers: Record<string, string> = {}) {
  const { url, jar, csrfToken } = await pendingConsent(server);
  const response = await submitConsent(url, jar, { decision: "allow", identifier, password, csrfToken, headers });
  return { status: response.status, retryAfter: response.headers.get("retry-after"), html: await response.text() };
}

/**
 * Opens a consent screen per attempt first, then posts every attempt at once (as a script would). Returns the
 * statuses and the free attempts' upper bound for how long the batch took: 400 is an attempt that was checked, 429
 * one that was refused unchecked. The rule lets `free` attempts through at once and then one more after 1 s, 2 s,
 * 4 s, … (docs/decisions/0009), so a batch that took T seconds under load may see floor(log2(T + 1)) more.
 */
async function simultaneousAttempts(servers: TestServer[], posts: { identifier: string; password: string; headers?: Record<string, string> }[], free = 5) {
  const pages = await Promise.all(posts.map((_, i) => pendingConsent(servers[i % servers.length]!)));
  const started = performance.now();
  const responses = await Promise.all(
    posts.map((post, i) => {
      const { url, jar, csrfToken } = pages[i]!;
      return submitConsent(url, jar, { decision: "allow", csrfToken, ...post });
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const statuses = responses.map((response) => response.status);
  return { statuses, checked: statuses.filter((status) => status === 400).length, mostChecked: free + Math.floor(Math.log2(seconds + 1)) };
}

/** What the attempts were checked against: the counters in the shared database. */
async function counterKeys(server: TestServer): Promise<{ key: string; count: number }[]> {
  // BYTEWISE: the order SQLite gives, whatever the PostgreSQL database's locale.
  return rowsOf<{ key: string; count: number }>(server.database(), sql`SELECT "key", "count" FROM "RateLimit" WHERE "key" LIKE 'sign-in:%' ORDER BY "key" ${BYTEWISE}`);
}

/** A distinct client address per request, as a botnet (or a forged header a trusted proxy passes on) gives it. */
const fromAddress = (i: number) => ({ "X-Forwarded-For": `198.51.100.${i + 1}` });

describe("sign-in throttling: per account and per address, growing delays", () => {
  let server: TestServer;
  // The server's clock is moved forward instead of waiting out the delays (docs/decisions/0036).
  const clock = testClock();
  beforeAll(async () => {
    // A first wait of 10 s: far longer than a loaded machine's own delays (a password check, a round trip), so that
    // they cannot pass for the wait having grown, or not. The clock moves 30 s in all, well inside the DPoP proofs'
    // 60 s of age (ATRIUM_DPOP_MAX_AGE_SECONDS) that the test client's real-time proofs must keep.
    server = await startTestServer({ ...clock.env, ATRIUM_SIGN_IN_FREE_ATTEMPTS: "3", ATRIUM_SIGN_IN_FIRST_WAIT_SECONDS: "10" });
    await createAlice(server);
  });
  afterAll(async () => {
    await server?.stop();
    clock.remove();
  });

  it("after the free attempts, even the right password waits, with a clear message; the wait grows", async () => {
    // Screens opened beforehand, so the attempt after the third failure follows it at once, even on a loaded machine.
    const next = await pendingConsent(server);
    for (let i = 0; i < 3; i++) expect((await attempt(server, ALICE.handle, "wrong password")).status).toBe(400);
    const refused = await submitConsent(next.url, next.jar, { decision: "allow", identifier: ALICE.handle, password: ALICE.password, csrfToken: next.csrfToken });
    const blocked = { status: refused.status, retryAfter: refused.headers.get("retry-after"), html: await refused.text() };
    expect(blocked.status).toBe(429);
    expect(Number(blocked.retryAfter)).toBeGreaterThan(0);
    expect(Number(blocked.retryAfter)).toBeLessThanOrEqual(10);
    expect(blocked.html).toContain("Too many sign-in attempts");
    expect(blocked.html).not.toContain(ALICE.password);

    clock.advance(10_100);
    // One more failure doubles the wait to 20 seconds, counted from that attempt: more than the first wait could be,
    // however long the password check and the round trips took on this machine (seconds at most).
    expect((await attempt(server, ALICE.handle, "still wrong")).status).toBe(400);
    const longer = await attempt(server, ALICE.handle, ALICE.password);
    expect(longer.status).toBe(429);
    expect(Number(longer.retryAfter)).toBeGreaterThan(10);
    expect(Number(longer.retryAfter)).toBeLessThanOrEqual(20);

    clock.advance(20_100);
    expect((await attempt(server, ALICE.handle, ALICE.password)).status).toBe(303);
  });

  it("guessing across many accounts from one address is throttled by address (four times an account's free attempts: it may be many people)", async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= 14 && statuses.at(-1) !== 429; i++) statuses.push((await attempt(server, `nobody-${i}.test`, "guess")).status);
    // ATRIUM_SIGN_IN_FREE_ATTEMPTS is 3 here: the address checks 12 (Alice's three failures above among them), then waits.
    expect(statuses.at(-1), JSON.stringify(statuses)).toBe(429);
    expect(statuses.filter((status) => status === 400).length).toBeLessThanOrEqual(12);
  });
});

describe("sign-in throttling under attack: simultaneous attempts, every alias, two processes", () => {
  const BOB = { handle: "bob.test", email: "bob@example.com", password: "bob's right password" };
  let first: TestServer;
  let second: TestServer;
  beforeAll(async () => {
    // Behind a trusted proxy, so each attempt can come from its own address: only the account's counter then holds.
    const env = { ATRIUM_SIGN_IN_FREE_ATTEMPTS: "5", ATRIUM_TRUST_PROXY: "1" };
    first = await startTestServer(env);
    second = await startTestServer({ ...env, DATABASE_URL: first.databaseUrl });
    await createAccount(first, BOB);
  });
  afterAll(async () => {
    await second?.stop();
    await first?.stop();
  });

  it("20 simultaneous wrong passwords for one account, spread over both processes: only the 5 free ones are checked", async () => {
    const { statuses, checked, mostChecked } = await simultaneousAttempts(
      [first, second],
      Array.from({ length: 20 }, (_, i) => ({ identifier: BOB.handle, password: `guess ${i}`, headers: fromAddress(i) })),
    );
    expect(checked, JSON.stringify(statuses)).toBeGreaterThanOrEqual(5);
    expect(checked, JSON.stringify(statuses)).toBeLessThanOrEqual(mostChecked);
    expect(statuses.filter((status) => status !== 400 && status !== 429), JSON.stringify(statuses)).toEqual([]);
    // Every checked attempt counted against Bob's account and against what was typed (docs/decisions/0023a).
    const bob = (await rowOf<{ did: string }>(first.database(), sql`SELECT "did" FROM "Account" WHERE "handle" = 'bob.test'`))!;
    expect((await counterKeys(first)).filter((row) => row.key.startsWith("sign-in:account:") || row.key.startsWith("sign-in:typed:"))).toEqual([
      { key: `sign-in:account:${bob.did}`, count: checked },
      { key: `sign-in:typed:${sha256Base64url(BOB.handle)}`, count: checked },
    ]);
  });

  it("every alias of an account (handle, email, DID, case variants, @, full-width) shares one counter, which caps quietly", async () => {
    const { did } = await createAccount(first, { handle: "carol.test", email: "carol@example.com", password: "carol's password" });
    const aliases = ["carol.test", "CAROL.TEST", "@Carol.Test", "carol@example.com", "Carol@Example.COM", did, did.toUpperCase(), "ｃａｒｏｌ．ｔｅｓｔ", ` carol.test `];
    const { statuses, mostChecked } = await simultaneousAttempts(
      [first, second],
      aliases.map((identifier, i) => ({ identifier, password: "not carol's", headers: fromAddress(20 + i) })),
    );
    // No alias was typed more than its free attempts, so none is refused visibly: those past the account's cap get a
    // wrong password's answer, unchecked (docs/decisions/0023a). The account's counter says how many were checked.
    expect(statuses).toEqual(Array(aliases.length).fill(400));
    const counters = (await counterKeys(first)).filter((row) => row.key.includes("carol") || row.key.endsWith(did));
    expect(counters.map((row) => row.key)).toEqual([`sign-in:account:${did}`]);
    expect(counters[0]!.count).toBeGreaterThanOrEqual(5);
    expect(counters[0]!.count).toBeLessThanOrEqual(mostChecked);
  });

  it("an identifier that names no account is limited exactly like one that does", async () => {
    const { statuses, checked, mostChecked } = await simultaneousAttempts(
      [first, second],
      Array.from({ length: 12 }, (_, i) => ({ identifier: i % 2 ? "nobody.test" : "NoBody.Test", password: "guess", headers: fromAddress(60 + i) })),
    );
    expect(checked, JSON.stringify(statuses)).toBeGreaterThanOrEqual(5);
    expect(checked, JSON.stringify(statuses)).toBeLessThanOrEqual(mostChecked);
    expect((await counterKeys(first)).filter((row) => row.key === `sign-in:typed:${sha256Base64url("nobody.test")}`)).toEqual([{ key: `sign-in:typed:${sha256Base64url("nobody.test")}`, count: checked }]);
  });

  it("a success hands back its attempt: the right password among failures leaves the other failures counted", async () => {
    const { did, handle } = await createAccount(first, { handle: "dave.test", email: "dave@example.com", password: "dave's password" });
    expect((await attempt(first, handle, "wrong", fromAddress(80))).status).toBe(400);
    expect((await attempt(second, handle, "dave's password", fromAddress(81))).status).toBe(303);
    expect((await counterKeys(first)).find((row) => row.key === `sign-in:account:${did}`)?.count).toBe(1);
    const { statuses, checked, mostChecked } = await simultaneousAttempts(
      [first, second],
      Array.from({ length: 8 }, (_, i) => ({ identifier: handle, password: `wrong ${i}`, headers: fromAddress(82 + i) })),
    );
    // One failure was already counted, the success was not: four more are checked at once.
    expect(checked, JSON.stringify(statuses)).toBeGreaterThanOrEqual(4);
    expect(checked, JSON.stringify(statuses)).toBeLessThanOrEqual(mostChecked - 1);
  });
});

describe("request limits per client address, shared by every process on the database", () => {
  let first: TestServer;
  let second: TestServer;
  const limits = { ATRIUM_RATE_LIMIT_PAR_PER_MINUTE: "4", ATRIUM_RATE_LIMIT_XRPC_PER_MINUTE: "3" };
  beforeAll(async () => {
    first = await startTestServer(limits);
    second = await startTestServer({ ...limits, DATABASE_URL: first.databaseUrl });
  });
  afterAll(async () => {
    await second?.stop();
    await first?.stop();
  });

  const par = (server: TestServer) =>
    fetch(`${server.issuer}/oauth/par`, { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: "client_id=x" });

  it("PAR: the fifth request in a minute from one address is 429 with Retry-After, counted across both processes", async () => {
    for (const server of [first, second, first, second]) expect((await par(server)).status).toBe(400);
    const limited = await par(first);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await limited.json()).toMatchObject({ error: "temporarily_unavailable" });
    expect((await par(second)).status).toBe(429);
  });

  it("XRPC: over the limit is 429 RateLimitExceeded in the XRPC error shape", async () => {
    const url = `${first.issuer}/xrpc/com.atproto.server.describeServer`;
    for (let i = 0; i < 3; i++) expect((await fetch(url)).status).toBe(200);
    const limited = await fetch(url);
    expect(limited.status).toBe(429);
    expect(await limited.json()).toMatchObject({ error: "RateLimitExceeded", message: expect.any(String) });
  });
});

describe("body size limits and timeouts", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ ATRIUM_REQUEST_TIMEOUT_SECONDS: "2", ATRIUM_BLOB_MAX_BYTES: "4096" });
  });
  afterAll(() => server?.stop());

  it("an oversized form is 413 with an OAuth error body, an oversized XRPC body 413 in XRPC shape", async () => {
    const big = `client_id=${"x".repeat(2 * 1024 * 1024)}`;
    const form = await fetch(`${server.issuer}/oauth/token`, { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body: big });
    expect(form.status).toBe(413);
    expect(await form.json()).toMatchObject({ error: "invalid_request" });
    const xrpc = await fetch(`${server.issuer}/xrpc/com.atproto.repo.createRecord`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ pad: "x".repeat(2 * 1024 * 1024) }),
    });
    expect(xrpc.status).toBe(413);
    expect(await xrpc.json()).toMatchObject({ error: "PayloadTooLarge" });
    const blob = await fetch(`${server.issuer}/xrpc/com.atproto.repo.uploadBlob`, {
      method: "POST",
      headers: { "Content-Type": "image/png" },
      body: new Uint8Array(8192),
    });
    expect(blob.status).toBe(413);
  });

  it("a client that sends its request too slowly is cut off (408 or 503) instead of holding the connection", async () => {
    const port = new URL(server.issuer).port;
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), "127.0.0.1", () => {
        socket.write("POST /oauth/token HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\ngrant_type=");
      });
      let received = "";
      socket.on("data", (chunk) => {
        received += chunk.toString();
        if (received.includes("\r\n")) {
          socket.destroy();
          resolve(received);
        }
      });
      // Until the server answers or closes the connection, however long the busy machine takes to: no window of our
      // own (the test's timeout is the safety net); a close without an answer fails below.
      socket.on("close", () => resolve(received));
      socket.on("error", reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 (408|503)/);
  });
});
