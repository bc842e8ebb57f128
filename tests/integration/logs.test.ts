/**
 * Structured logs (docs/decisions/0014): one JSON line per request with its
 * id, method, path (never the query), route, status and time; the request id
 * sent back as X-Request-Id; and not one secret in the server's whole output
 * after a complete OAuth run with request logs on at debug.
 */
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REDACTED } from "../../app/.server/observability/redaction.ts";
import { createPkce } from "../../scripts/lib/dpop-client.ts";
import { createLogger } from "../../server/logger.ts";
import { approveWithPassword, CookieJar, openConsentPage, submitConsent } from "../helpers/consent.ts";
import { ALICE, createAlice, newClient } from "../helpers/flow.ts";
import { SoftAuthenticator } from "../helpers/soft-authenticator.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

type LogLine = Record<string, unknown> & { level: string; msg: string };

/** Every log line the server printed (the readiness line aside, every line is a JSON log object). */
function logLines(server: TestServer): LogLine[] {
  return server
    .output()
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.startsWith('{"event":"listening"'))
    .map((line) => JSON.parse(line) as LogLine);
}

async function untilLogged(server: TestServer, requestId: string): Promise<void> {
  await server.printed(requestId);
}

/** Form fields, query parameters and JSON members whose values are secrets. */
const SECRET_NAMES = ["password", "code", "code_verifier", "refresh_token", "access_token", "token", "request_uri", "client_assertion", "csrf_token", "signature", "clientDataJSON", "authenticatorData"];

/**
 * Wraps fetch to remember every secret the test sends or receives: the
 * values of secret fields in queries, forms and JSON bodies (both ways),
 * Authorization and DPoP headers, cookies sent and set, and codes in
 * redirects.
 */
function recordSecrets(): { secrets: Set<string>; restore(): void } {
  const secrets = new Set<string>();
  const remember = (value: string | null | undefined) => {
    if (value && value.length >= 8) secrets.add(value);
  };
  const rememberParams = (params: URLSearchParams) => {
    for (const name of SECRET_NAMES) for (const value of params.getAll(name)) remember(value);
  };
  const rememberJson = (value: unknown) => {
    if (value === null || typeof value !== "object") return;
    for (const [key, member] of Object.entries(value)) {
      if (SECRET_NAMES.includes(key) && typeof member === "string") remember(member);
      else rememberJson(member);
    }
  };
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    rememberParams(url.searchParams);
    const headers = new Headers(init?.headers);
    const authorization = headers.get("authorization");
    if (authorization) {
      remember(authorization);
      remember(authorization.replace(/^\S+\s+/, ""));
    }
    remember(headers.get("dpop"));
    for (const pair of (headers.get("cookie") ?? "").split(";")) remember(pair.split("=").slice(1).join("=").trim());
    if (init?.body instanceof URLSearchParams) rememberParams(init.body);
    else if (typeof init?.body === "string") {
      try {
        rememberJson(JSON.parse(init.body));
      } catch {
        rememberParams(new URLSearchParams(init.body));
      }
    }
    const response = await realFetch(input, init);
    for (const cookie of response.headers.getSetCookie()) remember(cookie.split(";")[0]!.split("=").slice(1).join("="));
    const location = response.headers.get("location");
    if (location) rememberParams(new URL(location, url).searchParams);
    if ((response.headers.get("content-type") ?? "").includes("json")) rememberJson(await response.clone().json());
    return response;
  };
  return { secrets, restore: () => (globalThis.fetch = realFetch) };
}

describe("request logs at debug, through a complete OAuth run", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ ATRIUM_LOG_LEVEL: "debug", ATRIUM_LOG_REQUESTS: "1" });
    await createAlice(server);
  });
  afterAll(() => server?.stop());

  it("PAR, a failed sign-in, consent with the password, token, userinfo, getSession, refresh, revoke and a passkey attempt: no secret reaches the output", async () => {
    const recording = recordSecrets();
    const requestIds: string[] = [];
    const track = (response: { headers: Headers }) => requestIds.push(response.headers.get("x-request-id") ?? "(none)");
    try {
      const client = await newClient(server);
      const pkce = createPkce();
      const redirectUri = "http://127.0.0.1:54321/callback";
      const par = await client.pushAuthorizationRequest({ redirect_uri: redirectUri, scope: "atproto transition:generic", state: "s-1", code_challenge: pkce.challenge, code_challenge_method: "S256" });
      expect(par.status).toBe(201);
      track(par);
      const authorizeUrl = client.authorizeUrl(par.body.request_uri);

      // A wrong password first (a failed sign-in), then the right one.
      const jar = new CookieJar();
      const page = await openConsentPage(authorizeUrl, jar);
      const refused = await submitConsent(authorizeUrl, jar, { decision: "allow", identifier: ALICE.handle, password: "not the password at all", csrfToken: page.csrfToken });
      expect(refused.status).toBe(400);
      track(refused);
      const location = await approveWithPassword(authorizeUrl, jar, ALICE.handle, ALICE.password);
      const code = location.searchParams.get("code")!;

      const tokens = await client.exchangeCode(code, pkce.verifier, redirectUri);
      expect(tokens.status).toBe(200);
      track(tokens);
      const me = await client.userinfo(tokens.body.access_token);
      expect(me.status).toBe(200);
      track(me);
      const session = await client.xrpc(tokens.body.access_token, "com.atproto.server.getSession");
      expect(session.status).toBe(200);
      const refreshed = await client.refresh(tokens.body.refresh_token);
      expect(refreshed.status).toBe(200);
      const revoked = await client.revoke(refreshed.body.refresh_token);
      expect(revoked.status).toBe(200);
      track(revoked);

      // A passkey attempt on a new request's consent screen, with a passkey this server does not know.
      const second = await client.pushAuthorizationRequest({ redirect_uri: redirectUri, scope: "atproto", state: "s-2", code_challenge: pkce.challenge, code_challenge_method: "S256" });
      const secondUrl = client.authorizeUrl(second.body.request_uri);
      const passkeyJar = new CookieJar();
      const consent = await openConsentPage(secondUrl, passkeyJar);
      const optionsUrl = new URL("/oauth/passkey-auth", server.issuer);
      optionsUrl.searchParams.set("client_id", client.clientId);
      optionsUrl.searchParams.set("request_uri", second.body.request_uri);
      const options = (await (await fetch(optionsUrl, { headers: { cookie: passkeyJar.header() } })).json()) as { challenge: string };
      const assertion = new SoftAuthenticator().assert({ challenge: options.challenge, origin: server.issuer, rpId: "localhost", userVerified: true });
      const passkey = await fetch(`${server.issuer}/oauth/passkey-auth`, {
        method: "POST",
        headers: { "Content-Type": "application/json", cookie: passkeyJar.header(), origin: server.issuer },
        body: JSON.stringify({ request_uri: second.body.request_uri, client_id: client.clientId, csrf_token: consent.csrfToken, response: assertion }),
      });
      expect(passkey.status).toBe(400);
      track(passkey);
      await untilLogged(server, requestIds.at(-1)!);
    } finally {
      recording.restore();
    }

    const secrets = [...recording.secrets];
    // What the run handled: the password, both codes' worth of tokens, the request_uris, proofs and cookies.
    expect(secrets).toContain(ALICE.password);
    expect(secrets.filter((value) => value.startsWith("tok-")).length).toBeGreaterThanOrEqual(2);
    expect(secrets.filter((value) => value.startsWith("ref-")).length).toBeGreaterThanOrEqual(2);
    expect(secrets.filter((value) => value.startsWith("cod-")).length).toBe(1);
    expect(secrets.filter((value) => value.startsWith("urn:ietf:params:oauth:request_uri:")).length).toBe(2);
    expect(secrets.filter((value) => value.startsWith("eyJ")).length).toBeGreaterThanOrEqual(6);
    expect(secrets.filter((value) => value.startsWith("ses-")).length).toBeGreaterThanOrEqual(1);

    const output = server.output();
    const leaked = secrets.filter((secret) => output.includes(secret));
    expect(leaked).toEqual([]);
    // Nor any part of a request_uri (its random part is the secret).
    for (const secret of secrets.filter((value) => value.startsWith("urn:"))) expect(output).not.toContain(secret.split(":").at(-1));

    // Every request of the run has its line, found by the id it was answered with.
    const lines = logLines(server);
    const requests = lines.filter((line) => line.msg === "request");
    for (const id of requestIds) expect(requests.some((line) => line.reqId === id), id).toBe(true);
    for (const line of requests) {
      expect(line).toMatchObject({ level: "info", reqId: expect.any(String), method: expect.any(String), path: expect.any(String), route: expect.any(String), status: expect.any(Number), ms: expect.any(Number) });
      expect(line.path as string).not.toContain("?");
      // At debug, also who asked.
      expect(line).toMatchObject({ ip: "127.0.0.1", ua: expect.any(String) });
    }
    expect(requests.find((line) => line.reqId === requestIds[0])).toMatchObject({ method: "POST", path: "/oauth/par", route: "/oauth/par", status: 201 });
    expect(requests.find((line) => line.reqId === requestIds[1])).toMatchObject({ method: "POST", path: "/oauth/authorize", route: "routes/oauth.authorize", status: 400 });
    expect(requests.some((line) => line.path === "/oauth/passkey-auth" && line.method === "GET" && line.route === "routes/oauth.passkey-auth")).toBe(true);
    expect(lines.filter((line) => line.level === "error")).toEqual([]);
  });
});

describe("request ids, and ATRIUM_LOG_LEVEL=silent", () => {
  let direct: TestServer;
  let proxied: TestServer;
  beforeAll(async () => {
    [direct, proxied] = await Promise.all([startTestServer(), startTestServer({ ATRIUM_TRUST_PROXY: "1", ATRIUM_LOG_LEVEL: "silent" })]);
  });
  afterAll(async () => {
    await Promise.all([direct?.stop(), proxied?.stop()]);
  });

  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

  it("every answer carries a fresh X-Request-Id, the API's and the screens', and browsers may read it", async () => {
    const ids = new Set<string>();
    for (const path of ["/xrpc/com.atproto.server.describeServer", "/oauth/jwks", "/", "/account", "/no-such-page"]) {
      const response = await fetch(`${direct.issuer}${path}`);
      const id = response.headers.get("x-request-id");
      expect(id, path).toMatch(UUID);
      ids.add(id!);
    }
    expect(ids.size).toBe(5);
    const api = await fetch(`${direct.issuer}/oauth/jwks`);
    expect(api.headers.get("access-control-expose-headers")).toMatch(/X-Request-Id/);
  });

  it("request logs are on by default in production (NODE_ENV=production): one line per request", async () => {
    const response = await fetch(`${direct.issuer}/oauth/jwks?client_id=secret-looking-query`);
    const id = response.headers.get("x-request-id")!;
    await untilLogged(direct, id);
    const line = logLines(direct).find((candidate) => candidate.reqId === id);
    expect(line).toEqual({ level: "info", time: expect.any(Number), pid: expect.any(Number), hostname: expect.any(String), reqId: id, method: "GET", path: "/oauth/jwks", route: "/oauth/jwks", status: 200, ms: expect.any(Number), msg: "request" });
    expect(direct.output()).not.toContain("secret-looking-query");
  });

  it("a client's own X-Request-Id is not taken when no trusted proxy is configured", async () => {
    const response = await fetch(`${direct.issuer}/oauth/jwks`, { headers: { "X-Request-Id": "client-chosen-id-0001" } });
    expect(response.headers.get("x-request-id")).toMatch(UUID);
    const page = await fetch(`${direct.issuer}/`, { headers: { "X-Request-Id": "client-chosen-id-0001" } });
    expect(page.headers.get("x-request-id")).toMatch(UUID);
  });

  it("behind a trusted proxy (ATRIUM_TRUST_PROXY), its X-Request-Id is kept when it looks like an id, replaced otherwise", async () => {
    for (const path of ["/oauth/jwks", "/"]) {
      const kept = await fetch(`${proxied.issuer}${path}`, { headers: { "X-Request-Id": "7f1c2a9e0b3d4c5e" } });
      expect(kept.headers.get("x-request-id"), path).toBe("7f1c2a9e0b3d4c5e");
      for (const odd of ["short", "x".repeat(129), "two words here", '"quoted"-value-1', "line\\nbreak-value"]) {
        const replaced = await fetch(`${proxied.issuer}${path}`, { headers: { "X-Request-Id": odd } });
        expect(replaced.headers.get("x-request-id"), `${path} ${odd}`).toMatch(UUID);
      }
    }
  });

  it("ATRIUM_LOG_LEVEL=silent prints nothing but the readiness line", async () => {
    await fetch(`${proxied.issuer}/oauth/jwks`);
    await fetch(`${proxied.issuer}/xrpc/no.such.method`);
    // Its exit is the moment every line it would write is out (the logger flushes on exit, docs/decisions/0035): the
    // positive event that ends the wait, not a silence of some length (docs/decisions/0036). The last test here.
    await proxied.stop();
    const lines = proxied.output().split("\n").filter(Boolean);
    expect(lines).toEqual([expect.stringMatching(/^\{"event":"listening","port":\d+,"issuer":"http:\/\/localhost:\d+"\}$/)]);
  });
});

describe("the logger itself (server/logger.ts)", () => {
  function capture(level: "info" | "debug" = "info") {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString().split("\n").filter(Boolean));
        done();
      },
    });
    return { log: createLogger(level, stream), lines: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
  }

  it("censors secret fields wherever a log call puts them, and masks secrets inside error messages and stacks", () => {
    const { log, lines } = capture();
    const token = "tok-Qw3rTy8uIo9pAs1dFg2hJk4lZx5cVb6nM7qWeRtYuI";
    log.info(
      {
        password: "hunter2-hunter2",
        req: { headers: { authorization: `DPoP ${token}`, cookie: "atrium_session=ses-abcdefghijklmnopqrstu", dpop: "eyJ.eyJ.sig" } },
        form: { code: "cod-abcdefghijklmnopqrstuvwxyz", code_verifier: "verifier-verifier-verifier" },
        body: { client_assertion: "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln", refresh_token: "ref-abcdefghijklmnopqrstuvwx" },
        query: { request_uri: "urn:ietf:params:oauth:request_uri:req-abcdefghijklmnopqrstu" },
        err: Object.assign(new Error(`token ${token} was refused`), { request: { password: "hunter2-hunter2" } }),
      },
      "something happened",
    );
    const [line] = lines();
    const text = JSON.stringify(line);
    for (const secret of ["hunter2", token, "ses-abcdefghijklmnopqrstu", "cod-abcdefghijklmnopqrstuvwxyz", "verifier-verifier", "eyJhbGciOiJFUzI1NiJ9", "ref-abcdefghijklmnopqrstuvwx", "req-abcdefghijklmnopqrstu"]) {
      expect(text).not.toContain(secret);
    }
    expect(line).toMatchObject({ level: "info", msg: "something happened", password: REDACTED, req: { headers: { authorization: REDACTED, cookie: REDACTED, dpop: REDACTED } } });
    expect(line!.err).toMatchObject({ type: "Error", message: "token tok-[redacted] was refused", stack: expect.stringContaining("at ") });
  });

  it("writes levels by name and honours the level", () => {
    const { log, lines } = capture("info");
    log.debug({}, "hidden");
    log.warn({ a: 1 }, "shown");
    expect(lines()).toEqual([expect.objectContaining({ level: "warn", a: 1, msg: "shown" })]);
  });
});
