import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPkce, DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { CookieJar, openConsentPage, submitConsent } from "../helpers/consent.ts";
import { ALICE, CLIENT_ID, createAlice, parForm } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

/** Abuse limits (DESIGN 4.5): sign-in throttling, per-address request limits, body limits, timeouts. */

async function pendingConsent(server: TestServer) {
  const client = new DpopClient(server.issuer, await generateDpopKey(), CLIENT_ID);
  const par = await client.pushAuthorizationRequest(parForm({ client_id: undefined, response_type: undefined, code_challenge: createPkce().challenge }));
  expect(par.status).toBe(201);
  const url = client.authorizeUrl(par.body.request_uri);
  const jar = new CookieJar();
  const page = await openConsentPage(url, jar);
  return { url, jar, csrfToken: page.csrfToken! };
}

async function attempt(server: TestServer, identifier: string, password: string) {
  const { url, jar, csrfToken } = await pendingConsent(server);
  const response = await submitConsent(url, jar, { decision: "allow", identifier, password, csrfToken });
  return { status: response.status, retryAfter: response.headers.get("retry-after"), html: await response.text() };
}

describe("sign-in throttling: per account and per address, growing delays", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ ATRIUM_SIGN_IN_FREE_ATTEMPTS: "3" });
    await createAlice(server);
  });
  afterAll(() => server?.stop());

  it("after the free attempts, even the right password waits, with a clear message; the wait grows", async () => {
    for (let i = 0; i < 4; i++) expect((await attempt(server, ALICE.handle, "wrong password")).status).toBe(400);
    const blocked = await attempt(server, ALICE.handle, ALICE.password);
    expect(blocked.status).toBe(429);
    expect(blocked.retryAfter).toBe("1");
    expect(blocked.html).toContain("Too many sign-in attempts");
    expect(blocked.html).not.toContain(ALICE.password);

    await new Promise((resolve) => setTimeout(resolve, 1100));
    // One more failure doubles the wait to 2 seconds.
    expect((await attempt(server, ALICE.handle, "still wrong")).status).toBe(400);
    const longer = await attempt(server, ALICE.handle, ALICE.password);
    expect(longer.status).toBe(429);
    expect(longer.retryAfter).toBe("2");

    await new Promise((resolve) => setTimeout(resolve, 2100));
    expect((await attempt(server, ALICE.handle, ALICE.password)).status).toBe(303);
  });

  it("guessing across many accounts from one address is throttled by address", async () => {
    // Alice's success cleared her account counter, not this address's.
    const other = await attempt(server, "nobody-1.test", "guess");
    expect([400, 429]).toContain(other.status);
    let lastStatus = other.status;
    for (let i = 2; i < 8 && lastStatus !== 429; i++) lastStatus = (await attempt(server, `nobody-${i}.test`, "guess")).status;
    expect(lastStatus).toBe(429);
  });
});

describe("request limits per client address, shared by every process on the database", () => {
  let first: TestServer;
  let second: TestServer;
  const limits = { ATRIUM_RATE_LIMIT_PAR_PER_MINUTE: "4", ATRIUM_RATE_LIMIT_XRPC_PER_MINUTE: "3" };
  beforeAll(async () => {
    first = await startTestServer(limits);
    second = await startTestServer({ ...limits, DATABASE_URL: `file:${first.databasePath}` });
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
      socket.on("close", () => resolve(received));
      socket.on("error", reject);
      setTimeout(() => {
        socket.destroy();
        resolve(received);
      }, 8000);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 (408|503)/);
  });
});
