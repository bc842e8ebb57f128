/**
 * Prometheus metrics (docs/decisions/0014), scraped for real from the
 * metrics port: counters move with what happens (a token exchange and a
 * refresh, a refused sign-in, a 429), labels stay bounded whatever paths
 * clients ask for, Node's process metrics come along, and nothing is served
 * on the public port or, without ATRIUM_METRICS_PORT, anywhere.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPkce } from "../../scripts/lib/dpop-client.ts";
import { approveWithPassword, CookieJar, openConsentPage, submitConsent } from "../helpers/consent.ts";
import { ALICE, createAlice, newClient } from "../helpers/flow.ts";
import { listeningPorts } from "../helpers/listening.ts";
import { scrape, scrapeUntil, seriesOf, valueOf, type Sample } from "../helpers/prometheus.ts";
import { freePort, startTestServer, type TestServer } from "../helpers/test-server.ts";

describe("GET /metrics on ATRIUM_METRICS_PORT", () => {
  let server: TestServer;
  let metricsPort: number;
  beforeAll(async () => {
    metricsPort = await freePort();
    // Each test counts its limits on its own client address (X-Forwarded-For, one trusted proxy hop).
    server = await startTestServer({ ATRIUM_METRICS_PORT: String(metricsPort), ATRIUM_TRUST_PROXY: "1", ATRIUM_RATE_LIMIT_PAR_PER_MINUTE: "4" });
    await createAlice(server);
  });
  afterAll(() => server?.stop());

  it("listens on the metrics port (loopback) besides the public port, answers Prometheus text, and 404 elsewhere", async () => {
    expect(await listeningPorts(server.pid)).toEqual([server.port, metricsPort].sort((a, b) => a - b));
    const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    expect(text).toMatch(/^# HELP atrium_http_requests_total /m);
    expect(text).toMatch(/^# TYPE atrium_http_request_duration_seconds histogram$/m);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { method: "POST" })).status).toBe(405);
  });

  it("is not served on the public port: /metrics there is a 404 like any unknown path", async () => {
    const response = await fetch(`${server.issuer}/metrics`);
    expect(response.status).toBe(404);
    expect(await response.text()).not.toContain("atrium_");
  });

  it("includes Node's process metrics under the atrium_ prefix, and every metric of the server from the start", async () => {
    const samples = await scrape(metricsPort);
    const names = new Set(samples.map((sample) => sample.name));
    for (const name of ["atrium_process_cpu_seconds_total", "atrium_process_resident_memory_bytes", "atrium_nodejs_eventloop_lag_seconds", "atrium_nodejs_heap_size_used_bytes"]) {
      expect(names, name).toContain(name);
    }
    expect(samples.filter((sample) => sample.name === "atrium_oauth_tokens_issued_total").map((sample) => sample.labels.grant_type).sort()).toEqual(["authorization_code", "refresh_token"]);
    expect(samples.filter((sample) => sample.name === "atrium_sign_in_failures_total").map((sample) => sample.labels.method).sort()).toEqual(["passkey", "password"]);
    expect(samples.filter((sample) => sample.name === "atrium_rate_limited_total").map((sample) => sample.labels.limit).sort()).toEqual(["firehose", "par", "repo_export", "screen", "sign_in", "token", "xrpc"]);
    expect(names).toContain("atrium_database_errors_total");
    // docs/decisions/0042: the repository exports' figures, at 0 before any export.
    for (const name of ["atrium_repo_exports_open", "atrium_repo_export_held_bytes", "atrium_repo_export_read_bytes_total"]) expect(valueOf(samples, name), name).toBe(0);
    for (const name of ["atrium_repo_exports_open", "atrium_repo_export_held_bytes", "atrium_repo_export_read_bytes_total"]) expect(names, name).toContain(name);
  });

  it("counts a code exchange and a refresh as issued tokens, and the requests by route", async () => {
    const before = await scrape(metricsPort);
    const client = await newClient(server);
    const pkce = createPkce();
    const redirectUri = "http://127.0.0.1:54321/callback";
    const par = await client.pushAuthorizationRequest({ redirect_uri: redirectUri, scope: "atproto", state: "s", code_challenge: pkce.challenge, code_challenge_method: "S256" });
    const location = await approveWithPassword(client.authorizeUrl(par.body.request_uri), new CookieJar(), ALICE.handle, ALICE.password);
    const tokens = await client.exchangeCode(location.searchParams.get("code")!, pkce.verifier, redirectUri);
    expect(tokens.status).toBe(200);
    const refreshed = await client.refresh(tokens.body.refresh_token);
    expect(refreshed.status).toBe(200);
    expect((await client.xrpc(refreshed.body.access_token, "com.atproto.server.getSession")).status).toBe(200);
    const consented = { route: "routes/oauth.authorize", method: "POST", status: "303" };
    const after = await scrapeUntil(metricsPort, (samples) => valueOf(samples, "atrium_http_requests_total", consented) > valueOf(before, "atrium_http_requests_total", consented));

    const moved = (name: string, labels: Record<string, string>) => valueOf(after, name, labels) - valueOf(before, name, labels);
    expect(moved("atrium_oauth_tokens_issued_total", { grant_type: "authorization_code" })).toBe(1);
    expect(moved("atrium_oauth_tokens_issued_total", { grant_type: "refresh_token" })).toBe(1);
    expect(moved("atrium_http_requests_total", { route: "/oauth/token", method: "POST", status: "200" })).toBe(2);
    expect(moved("atrium_http_requests_total", { route: "/oauth/par", method: "POST", status: "201" })).toBe(1);
    expect(moved("atrium_http_requests_total", consented)).toBe(1);
    expect(moved("atrium_http_requests_total", { route: "/xrpc/com.atproto.server.getSession", method: "GET", status: "200" })).toBe(1);
    expect(moved("atrium_http_request_duration_seconds_count", { route: "/oauth/token" })).toBeGreaterThanOrEqual(2);
    expect(valueOf(after, "atrium_http_request_duration_seconds_sum", { route: "/oauth/token" })).toBeGreaterThan(0);
  });

  it("counts a refused sign-in by method, never by account", async () => {
    const before = await scrape(metricsPort);
    const client = await newClient(server);
    const par = await client.pushAuthorizationRequest({ redirect_uri: "http://127.0.0.1:54321/callback", scope: "atproto", state: "s", code_challenge: createPkce().challenge, code_challenge_method: "S256" });
    const authorizeUrl = client.authorizeUrl(par.body.request_uri);
    const jar = new CookieJar();
    const page = await openConsentPage(authorizeUrl, jar);
    const refused = await submitConsent(authorizeUrl, jar, { decision: "allow", identifier: ALICE.handle, password: "wrong password", csrfToken: page.csrfToken, headers: { "X-Forwarded-For": "198.51.100.7" } });
    expect(refused.status).toBe(400);
    const after = await scrape(metricsPort);
    expect(valueOf(after, "atrium_sign_in_failures_total", { method: "password" }) - valueOf(before, "atrium_sign_in_failures_total", { method: "password" })).toBe(1);
    const text = after.map((sample) => JSON.stringify(sample)).join("\n");
    expect(text).not.toContain(ALICE.handle);
    expect(text).not.toContain("did:plc");
  });

  it("counts a 429 by its limit class", async () => {
    const before = valueOf(await scrape(metricsPort), "atrium_rate_limited_total", { limit: "par" });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const response = await fetch(`${server.issuer}/oauth/par`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", "X-Forwarded-For": "203.0.113.99" },
        body: "client_id=x",
      });
      statuses.push(response.status);
    }
    expect(statuses).toEqual([400, 400, 400, 400, 429, 429]);
    const after = await scrape(metricsPort);
    expect(valueOf(after, "atrium_rate_limited_total", { limit: "par" }) - before).toBe(2);
    expect(valueOf(after, "atrium_http_requests_total", { route: "/oauth/par", method: "POST", status: "429" })).toBe(2);
  });

  it("keeps labels bounded: 200 requests to random unknown /xrpc paths and 50 to random pages add no label value", async () => {
    const randomName = () => randomBytes(6).toString("hex");
    const unknownPaths = [
      () => `/xrpc/com.example${randomName()}.method${randomName()}`,
      () => `/xrpc/${randomName()}`,
      () => `/xrpc/COM.Example.${randomName()}.X`,
      () => `/xrpc/com.atproto.server.${randomName()}`,
    ];
    const screenPath = () => `/${randomName()}/${randomName()}`;
    const notFound = { route: "routes/$", method: "GET", status: "404" };
    const notFoundBefore = valueOf(await scrape(metricsPort), "atrium_http_requests_total", notFound);
    // Once each kind first: the first request of a kind may make the one series it is counted in.
    for (const make of unknownPaths) await fetch(`${server.issuer}${make()}`, { headers: { "X-Forwarded-For": "192.0.2.50" } });
    await fetch(`${server.issuer}${screenPath()}`, { headers: { "X-Forwarded-For": "192.0.2.51" } });
    const before = await scrapeUntil(metricsPort, (samples) => valueOf(samples, "atrium_http_requests_total", notFound) > notFoundBefore);

    for (let i = 0; i < 200; i++) {
      const response = await fetch(`${server.issuer}${unknownPaths[i % unknownPaths.length]!()}`, { headers: { "X-Forwarded-For": "192.0.2.50" } });
      expect(response.status).toBeGreaterThanOrEqual(400);
    }
    for (let i = 0; i < 50; i++) expect((await fetch(`${server.issuer}${screenPath()}`, { headers: { "X-Forwarded-For": "192.0.2.51" } })).status).toBe(404);
    const after = await scrapeUntil(metricsPort, (samples) => valueOf(samples, "atrium_http_requests_total", notFound) - valueOf(before, "atrium_http_requests_total", notFound) >= 50);

    const http = (samples: Sample[]) => seriesOf(samples, "atrium_http_");
    expect([...http(after)].filter((series) => !http(before).has(series))).toEqual([]);
    // All counted, under "other" (400 for names that are not NSIDs, 501 for methods this server does not have).
    const other = (samples: Sample[]) => samples.filter((sample) => sample.name === "atrium_http_requests_total" && sample.labels.route === "other").reduce((sum, sample) => sum + sample.value, 0);
    expect(other(after) - other(before)).toBe(200);
    expect(valueOf(after, "atrium_http_requests_total", notFound) - valueOf(before, "atrium_http_requests_total", notFound)).toBe(50);
    const routes = new Set(after.filter((sample) => sample.name === "atrium_http_requests_total").map((sample) => sample.labels.route));
    for (const route of routes) expect(route).toMatch(/^(\/(xrpc|oauth|\.well-known)\/[A-Za-z0-9._/-]*|routes\/[A-Za-z0-9._$-]+|other|static)$/);
  });
});

describe("without ATRIUM_METRICS_PORT", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.stop());

  it("nothing but the public port listens, and /metrics there is a 404", async () => {
    await fetch(`${server.issuer}/oauth/jwks`);
    expect(await listeningPorts(server.pid)).toEqual([server.port]);
    expect((await fetch(`${server.issuer}/metrics`)).status).toBe(404);
  });
});
