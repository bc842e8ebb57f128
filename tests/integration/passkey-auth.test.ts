/**
 * POST /oauth/passkey-auth (and its GET for fresh options), driven with a
 * software authenticator instead of a browser. Passkey rows are inserted
 * straight into the database; assertions are signed like a real
 * authenticator would sign them (ES256, P-256).
 *
 * The sign-in throttle counts failures per credential and per client
 * address, so each test uses its own credential and (via X-Forwarded-For,
 * with ATRIUM_TRUST_PROXY) its own address, and failures in one test never
 * throttle another.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { createPkce, DpopClient, generateDpopKey, sha256Base64url } from "../../scripts/lib/dpop-client.ts";
import { mintChallenge } from "../helpers/challenges.ts";
import { CookieJar, openConsentPage, visibleText } from "../helpers/consent.ts";
import { execute, rowOf } from "../helpers/databases.ts";
import { ALICE, CLIENT_ID, SCOPE } from "../helpers/flow.ts";
import { SoftAuthenticator, type AuthenticationResponseJSON, type AssertOptions } from "../helpers/soft-authenticator.ts";
import { testClock } from "../helpers/test-clock.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";

const RP_ID = "localhost";
const REDIRECT = "http://127.0.0.1:47123/callback";
const OTHER_CLIENT_ID = `http://localhost?${new URLSearchParams({ redirect_uri: "http://127.0.0.1/other", scope: "atproto" })}`;

let server: TestServer;
let alice: { did: string; handle: string };
let client: DpopClient;

// The server's clock is moved forward instead of waiting out the sign-in throttle's delay (docs/decisions/0036).
const clock = testClock();

beforeAll(async () => {
  server = await startTestServer({ ...clock.env, ATRIUM_TRUST_PROXY: "1" });
  alice = await createAccount(server, ALICE);
  client = new DpopClient(server.issuer, await generateDpopKey(), CLIENT_ID);
});
afterAll(async () => {
  await server?.stop();
  clock.remove();
});

// --- helpers ----------------------------------------------------------------

let lastAddress = 0;
/** A client address of its own (TEST-NET-3), sent as X-Forwarded-For. */
function newAddress(): string {
  lastAddress += 1;
  return `203.0.113.${lastAddress}`;
}

/** A new credential of Alice's, stored as registration would have stored it. */
async function alicePasskey(options: { counter?: number } = {}): Promise<SoftAuthenticator> {
  const authenticator = new SoftAuthenticator({ userHandle: Buffer.from(alice.did).toString("base64url") });
  if (options.counter !== undefined) authenticator.counter = options.counter;
  await authenticator.insertInto(server.database(), alice.did);
  return authenticator;
}

type Pending = {
  requestUri: string;
  authorizeUrl: string;
  clientId: string;
  jar: CookieJar;
  csrfToken: string;
  /** The challenge embedded in the consent page. */
  challenge: string;
  html: string;
  state: string;
  redirectUri: string;
  verifier: string;
  scope: string;
  address: string;
};

/** The passkey challenge the consent page embeds in its Remix loader data. */
function pageChallenge(html: string): string | undefined {
  return /\\"challenge\\",\\"([A-Za-z0-9_-]+)\\"/.exec(html)?.[1];
}

/** Pushes a request, opens its consent screen in a (new or given) browser, and reads the CSRF token and passkey challenge. */
async function pending(options: { state?: string; extra?: Record<string, string>; jar?: CookieJar; scope?: string } = {}): Promise<Pending> {
  const pkce = createPkce();
  const state = options.state ?? `state-${Math.random().toString(36).slice(2)}`;
  const scope = options.scope ?? SCOPE;
  const par = await client.pushAuthorizationRequest({
    redirect_uri: REDIRECT,
    scope,
    state,
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
    ...options.extra,
  });
  expect(par.status, JSON.stringify(par.body)).toBe(201);
  const authorizeUrl = client.authorizeUrl(par.body.request_uri);
  const jar = options.jar ?? new CookieJar();
  const page = await openConsentPage(authorizeUrl, jar);
  expect(page.status, page.html.slice(0, 300)).toBe(200);
  expect(page.csrfToken).toBeTruthy();
  const challenge = pageChallenge(page.html);
  expect(challenge, "the consent page embeds passkey options").toBeTruthy();
  return {
    requestUri: par.body.request_uri,
    authorizeUrl,
    clientId: CLIENT_ID,
    jar,
    csrfToken: page.csrfToken!,
    challenge: challenge!,
    html: page.html,
    state,
    redirectUri: REDIRECT,
    verifier: pkce.verifier,
    scope,
    address: newAddress(),
  };
}

type Options = { challenge: string; rpId: string; userVerification?: string; allowCredentials?: unknown[]; timeout?: number };

/** GET /oauth/passkey-auth: fresh options (a new challenge) for the request. */
async function freshOptions(p: Pending): Promise<{ status: number; body: Options & { error?: string } }> {
  const url = new URL("/oauth/passkey-auth", server.issuer);
  url.searchParams.set("client_id", p.clientId);
  url.searchParams.set("request_uri", p.requestUri);
  const response = await fetch(url, { headers: { cookie: p.jar.header() } });
  return { status: response.status, body: (await response.json()) as Options & { error?: string } };
}

async function freshChallenge(p: Pending): Promise<string> {
  const options = await freshOptions(p);
  expect(options.status, JSON.stringify(options.body)).toBe(200);
  return options.body.challenge;
}

function assertion(authenticator: SoftAuthenticator, challenge: string, overrides: Partial<AssertOptions> = {}): AuthenticationResponseJSON {
  return authenticator.assert({ challenge, origin: server.issuer, rpId: RP_ID, userVerified: true, ...overrides });
}

type PasskeyResult = {
  status: number;
  body: { ok?: boolean; handle?: string; next?: string; error?: string; error_description?: string } | string;
  json: { ok?: boolean; handle?: string; next?: string; error?: string; error_description?: string };
  headers: Headers;
  contentType: string;
};

/** POSTs to /oauth/passkey-auth as the consent page's script would (JSON, same origin, the browser's cookies). */
async function postPasskey(
  p: Pending,
  body: unknown,
  options: { origin?: string | null; address?: string; contentType?: string; raw?: string; store?: boolean } = {},
): Promise<PasskeyResult> {
  const headers: Record<string, string> = {
    "Content-Type": options.contentType ?? "application/json",
    cookie: p.jar.header(),
    "X-Forwarded-For": options.address ?? p.address,
  };
  if (options.origin !== null) headers.origin = options.origin ?? server.issuer;
  const response = await fetch(`${server.issuer}/oauth/passkey-auth`, {
    method: "POST",
    headers,
    body: options.raw ?? JSON.stringify(body),
    redirect: "manual",
  });
  if (options.store !== false) p.jar.store(response);
  const text = await response.text();
  const contentType = response.headers.get("content-type") ?? "";
  let parsed: PasskeyResult["body"] = text;
  if (contentType.includes("json")) parsed = JSON.parse(text) as PasskeyResult["json"];
  return { status: response.status, body: parsed, json: typeof parsed === "string" ? {} : parsed, headers: response.headers, contentType };
}

/** The body the consent page posts. */
function passkeyBody(p: Pending, response: unknown, extra: Record<string, unknown> = {}) {
  return { request_uri: p.requestUri, client_id: p.clientId, csrf_token: p.csrfToken, response, ...extra };
}

/** Posts the consent form (decision=allow), optionally with a password, from the test's address. */
async function allow(p: Pending, credentials?: { identifier: string; password: string }): Promise<Response> {
  const page = await openConsentPage(p.authorizeUrl, p.jar);
  expect(page.status).toBe(200);
  const form = new URLSearchParams({ csrf_token: page.csrfToken ?? "", request_uri: p.requestUri, client_id: p.clientId, decision: "allow" });
  if (credentials) {
    form.set("identifier", credentials.identifier);
    form.set("password", credentials.password);
  }
  const response = await fetch(p.authorizeUrl, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", cookie: p.jar.header(), origin: server.issuer, "X-Forwarded-For": p.address },
    body: form,
    redirect: "manual",
  });
  p.jar.store(response);
  return response;
}

function redirectOf(response: Response): URL {
  expect(response.status).toBe(303);
  const location = response.headers.get("location");
  expect(location).toBeTruthy();
  return new URL(location!);
}


type PasskeyRow = { credentialId: string; accountDid: string; counter: number; lastUsedAt: number | null };

async function passkeyRow(authenticator: SoftAuthenticator): Promise<PasskeyRow | undefined> {
  return rowOf<PasskeyRow>(server.database(), sql`SELECT "credentialId", "accountDid", "counter", "lastUsedAt" FROM "Passkey" WHERE "credentialId" = ${authenticator.id}`);
}

function expectPasskeyFailure(result: PasskeyResult, pattern?: RegExp) {
  expect(result.status, JSON.stringify(result.body)).toBe(400);
  expect(result.contentType).toMatch(/application\/json/);
  expect(result.json.error).toBe("passkey_failed");
  if (pattern) expect(result.json.error_description).toMatch(pattern);
  expect(result.headers.getSetCookie().some((cookie) => cookie.includes("atrium_session"))).toBe(false);
}

// --- tests ------------------------------------------------------------------

describe("POST /oauth/passkey-auth", () => {
  it("the consent page embeds single-use options bound to this request; GET gives fresh ones", async () => {
    await alicePasskey();
    const p = await pending();
    // WebAuthn L3 §13.4.3: challenges "SHOULD therefore be at least 16 bytes long".
    expect(Buffer.from(p.challenge, "base64url").length).toBeGreaterThanOrEqual(16);

    const fresh = await freshOptions(p);
    expect(fresh.status).toBe(200);
    expect(fresh.body.rpId).toBe(RP_ID);
    expect(fresh.body.allowCredentials ?? []).toEqual([]);
    expect(fresh.body.challenge).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(fresh.body.challenge).not.toBe(p.challenge);

    // Unknown requests get a JSON 400, not options.
    const url = new URL("/oauth/passkey-auth", server.issuer);
    url.searchParams.set("client_id", CLIENT_ID);
    url.searchParams.set("request_uri", "urn:ietf:params:oauth:request_uri:nope");
    const unknown = await fetch(url);
    expect(unknown.status).toBe(400);
    // The stable code of the error model (docs/architecture.md, "Errors"): the request is unknown or spent.
    expect(((await unknown.json()) as { error?: string }).error).toBe("request_expired");
    const bare = await fetch(new URL("/oauth/passkey-auth", server.issuer));
    expect(bare.status).toBe(400);
    expect(bare.headers.get("content-type")).toMatch(/json/);
  });

  it("login_hint tells nothing about which identifiers are registered: the passkey offer is the same for every hint", async () => {
    await createAccount(server, { handle: "nopasskey.test", email: "nopasskey@example.com", password: "a password without passkeys" });
    for (const hint of ["nopasskey@example.com", "nobody-here@example.com", "nopasskey.test", alice.handle]) {
      const p = await pending({ extra: { login_hint: hint } });
      expect(p.challenge, hint).toBeTruthy();
    }
  });

  it("success: signs in (session cookie), consent stays an explicit step, and the passkey's counter and lastUsedAt are updated", async () => {
    const authenticator = await alicePasskey();
    const p = await pending();
    const before = (await passkeyRow(authenticator))!;
    expect(before.counter).toBe(0);
    expect(before.lastUsedAt).toBeNull();

    const result = await postPasskey(p, passkeyBody(p, assertion(authenticator, p.challenge, { counter: 7 })));
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    expect(result.json.ok).toBe(true);
    expect(result.json.handle).toBe(ALICE.handle);
    const next = new URL(result.json.next!, server.issuer);
    expect(next.pathname).toBe("/oauth/authorize");
    expect(next.searchParams.get("request_uri")).toBe(p.requestUri);
    expect(next.searchParams.get("client_id")).toBe(CLIENT_ID);
    expect(result.headers.get("cache-control")).toMatch(/no-store/);
    const sessionCookie = result.headers.getSetCookie().find((cookie) => cookie.startsWith("atrium_session="));
    expect(sessionCookie).toBeTruthy();
    expect(sessionCookie).toMatch(/HttpOnly/i);
    expect(sessionCookie).toMatch(/SameSite=Lax/i);
    // Nothing was approved yet: no code, no redirect to the client.
    expect(JSON.stringify(result.body)).not.toMatch(/code=|127\.0\.0\.1:47123/);

    const after = (await passkeyRow(authenticator))!;
    expect(after.counter).toBe(7);
    expect(after.lastUsedAt).toEqual(expect.any(Number));
    expect(after.lastUsedAt! - Date.now()).toBeLessThan(60_000);

    // The screen the browser returns to shows the signed-in account...
    const page = await openConsentPage(new URL(result.json.next!, server.issuer).href, p.jar);
    expect(page.status).toBe(200);
    const text = visibleText(page.html);
    expect(text).toContain(`Signed in as @${ALICE.handle}`);
    // ...and allowing needs no password now.
    const location = redirectOf(await allow(p));
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.searchParams.get("state")).toBe(p.state);
    expect(location.searchParams.get("iss")).toBe(server.issuer);
    const code = location.searchParams.get("code");
    expect(code).toBeTruthy();
    const tokens = await client.exchangeCode(code!, p.verifier, p.redirectUri);
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    expect(tokens.body.sub).toBe(alice.did);

    // The request is used up: a passkey post for it now is refused, not a sign-in.
    const late = await postPasskey(p, passkeyBody(p, assertion(authenticator, p.challenge)), { store: false });
    expect(late.status).toBe(400);
    expect(late.json.error).toBe("request_answered");
  });

  it("a replayed assertion (same challenge twice) is refused the second time", async () => {
    const authenticator = await alicePasskey();
    const p = await pending();
    const signed = assertion(authenticator, p.challenge);
    const first = await postPasskey(p, passkeyBody(p, signed), { store: false });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const second = await postPasskey(p, passkeyBody(p, signed), { store: false });
    expectPasskeyFailure(second, /expired|already used/);
  });

  it("the same assertion posted 10 times in parallel signs in exactly once (docs/architecture.md, 'Tokens and codes': single-use challenge)", async () => {
    const authenticator = await alicePasskey();
    const p = await pending();
    const signed = assertion(authenticator, p.challenge);
    const results = await Promise.all(Array.from({ length: 10 }, () => postPasskey(p, passkeyBody(p, signed), { store: false })));
    expect(results.filter((result) => result.status === 200)).toHaveLength(1);
    // The losers are refused: spent challenge (400), or, once their failures add up, the sign-in throttle (429).
    for (const result of results.filter((candidate) => candidate.status !== 200)) expect([400, 429]).toContain(result.status);
  });

  it("a challenge issued for one request is refused for another (and what that does to the first)", async () => {
    const authenticator = await alicePasskey();
    const jar = new CookieJar();
    const a = await pending({ jar });
    const b = await pending({ jar });
    const signedForA = assertion(authenticator, a.challenge);

    const crossed = await postPasskey(b, passkeyBody(b, signedForA), { store: false });
    expectPasskeyFailure(crossed, /another sign-in|expired|already used/);

    // Observed behaviour: the refused post does not spend A's challenge (the
    // single DELETE only matches the right binding), so it still works for A.
    const forA = await postPasskey(a, passkeyBody(a, signedForA), { store: false });
    expect(forA.status, JSON.stringify(forA.body)).toBe(200);
    // ...and only once.
    expectPasskeyFailure(await postPasskey(a, passkeyBody(a, signedForA), { store: false }), /expired|already used/);
  });

  it("an expired challenge, or one issued for registration, is refused", async () => {
    const authenticator = await alicePasskey();
    const p = await pending();
    // Minted with the server's own key: one that expired a second ago, one issued for registering a passkey.
    const expired = await mintChallenge(server, "authenticate", { requestIdHash: sha256Base64url(p.requestUri) }, { issuedAt: Date.now() - 301_000 });
    const registration = await mintChallenge(server, "register", { accountDid: alice.did });
    expectPasskeyFailure(await postPasskey(p, passkeyBody(p, assertion(authenticator, expired))), /expired/);
    expectPasskeyFailure(await postPasskey(p, passkeyBody(p, assertion(authenticator, registration))), /expired|another/);
    // A challenge the server never issued.
    expectPasskeyFailure(await postPasskey(p, passkeyBody(p, assertion(authenticator, "bm90LWlzc3VlZC1ieS10aGUtc2VydmVy"))), /expired/);
    // Control: minted the same way with the current clock and this request, it signs in.
    const live = await mintChallenge(server, "authenticate", { requestIdHash: sha256Base64url(p.requestUri) });
    expect((await postPasskey(p, passkeyBody(p, assertion(authenticator, live)))).status).toBe(200);
  });

  it("an assertion for a deleted passkey is refused with a clear message; password sign-in still works on that request", async () => {
    const authenticator = await alicePasskey();
    const p = await pending();
    await execute(server.database(), sql`DELETE FROM "Passkey" WHERE "credentialId" = ${authenticator.id}`);
    const result = await postPasskey(p, passkeyBody(p, assertion(authenticator, await freshChallenge(p))));
    expectPasskeyFailure(result, /not registered/);
    expect(result.json.error_description).toMatch(/password/i);

    const location = redirectOf(await allow(p, { identifier: ALICE.handle, password: ALICE.password }));
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.searchParams.get("state")).toBe(p.state);
    expect(location.searchParams.get("code")).toBeTruthy();
  });

  it("OAuth parameters in the posted body are ignored: the code goes to the stored redirect_uri with the stored state and scope", async () => {
    const authenticator = await alicePasskey();
    const p = await pending({ scope: "atproto" });
    const tampered = passkeyBody(p, assertion(authenticator, p.challenge), {
      redirect_uri: "https://evil.example/callback",
      scope: "atproto transition:generic transition:email transition:chat.bsky",
      state: "attacker-state",
      response_type: "token",
      code_challenge: createPkce().challenge,
      prompt: "none",
      login_hint: "mallory.test",
      did: "did:plc:attacker",
    });
    const result = await postPasskey(p, tampered);
    expect([200, 400]).toContain(result.status);
    if (result.status === 200) {
      expect(result.json.handle).toBe(ALICE.handle);
      const next = new URL(result.json.next!, server.issuer);
      expect(next.searchParams.get("request_uri")).toBe(p.requestUri);
      expect(next.searchParams.get("client_id")).toBe(CLIENT_ID);
      expect(next.search).not.toMatch(/evil|attacker/);
    } else {
      // Refused: sign in with a fresh, untampered post instead.
      const again = await postPasskey(p, passkeyBody(p, assertion(authenticator, await freshChallenge(p))));
      expect(again.status).toBe(200);
    }
    const location = redirectOf(await allow(p));
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.searchParams.get("state")).toBe(p.state);
    expect(location.href).not.toMatch(/evil|attacker/);
    const tokens = await client.exchangeCode(location.searchParams.get("code")!, p.verifier, p.redirectUri);
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    expect(tokens.body.scope).toBe("atproto");
  });

  it("another client's client_id is refused (400) before the passkey is checked, and ends the request as the screen does (docs/decisions/0032)", async () => {
    const authenticator = await alicePasskey();
    const p = await pending();
    const signed = assertion(authenticator, p.challenge);
    const wrong = await postPasskey(p, { ...passkeyBody(p, signed), client_id: OTHER_CLIENT_ID }, { store: false });
    expect(wrong.status, JSON.stringify(wrong.body)).toBe(400);
    expect(wrong.json.error).toBe("request_invalid");
    // The page shows this to the person: plain words, no protocol names (issue 19).
    expect(wrong.json.error_description).toMatch(/another app/);
    expect(wrong.json.error_description).not.toMatch(/request_uri|client_id|DPoP|\bPAR\b/);
    expect(wrong.headers.getSetCookie().some((cookie) => cookie.includes("atrium_session"))).toBe(false);
    // The request was ended and its app answered: the right post now finds it answered and signs nobody in either.
    const right = await postPasskey(p, passkeyBody(p, signed), { store: false });
    expect(right.status, JSON.stringify(right.body)).toBe(400);
    expect(right.json.error).toBe("request_answered");
    expect(right.headers.getSetCookie().some((cookie) => cookie.includes("atrium_session"))).toBe(false);
  });

  it("a signature by another key is refused, and the challenge is spent anyway", async () => {
    const authenticator = await alicePasskey();
    const impostor = new SoftAuthenticator();
    const p = await pending();
    const forged = await postPasskey(p, passkeyBody(p, assertion(authenticator, p.challenge, { signWith: impostor.privateKey })));
    expectPasskeyFailure(forged, /could not be verified/);
    expect((await passkeyRow(authenticator))!.lastUsedAt).toBeNull();
    // "The challenge is spent whatever the outcome": a good signature over it is now too late.
    expectPasskeyFailure(await postPasskey(p, passkeyBody(p, assertion(authenticator, p.challenge))), /expired|already used/);
  });

  it("a wrong origin in clientDataJSON is refused", async () => {
    const authenticator = await alicePasskey();
    const p = await pending();
    const result = await postPasskey(p, passkeyBody(p, assertion(authenticator, p.challenge, { origin: "https://evil.example" })));
    expectPasskeyFailure(result, /origin/i);
  });

  it("a wrong RP ID, a missing user-presence flag, or a registration-type clientData is refused", async () => {
    const cases: [Partial<AssertOptions>, RegExp][] = [
      [{ rpId: "evil.example" }, /RP ID|rpid|rp id/i],
      [{ userPresent: false, userVerified: false }, /present/i],
      [{ type: "webauthn.create" }, /type/i],
    ];
    for (const [overrides, pattern] of cases) {
      const authenticator = await alicePasskey();
      const p = await pending();
      expectPasskeyFailure(await postPasskey(p, passkeyBody(p, assertion(authenticator, p.challenge, overrides))), pattern);
    }
  });

  it("a signature counter that does not increase is refused, in the person's words, and logged for the operator; a higher one is accepted and stored", async () => {
    const authenticator = await alicePasskey({ counter: 10 });
    expect((await passkeyRow(authenticator))!.counter).toBe(10);
    const p = await pending();
    // The same answer as any other passkey that cannot be verified: nothing of the stored count is shown.
    const notVerified = /^The passkey could not be verified\.$/;
    expectPasskeyFailure(await postPasskey(p, passkeyBody(p, assertion(authenticator, p.challenge, { counter: 5 }))), notVerified);
    expectPasskeyFailure(await postPasskey(p, passkeyBody(p, assertion(authenticator, await freshChallenge(p), { counter: 10 }))), notVerified);
    expectPasskeyFailure(await postPasskey(p, passkeyBody(p, assertion(authenticator, await freshChallenge(p), { counter: 0 }))), notVerified);
    expect((await passkeyRow(authenticator))!.counter).toBe(10);
    expect(await server.printed("its signature counter did not advance")).toContain(authenticator.credentialId.toString("base64url"));
    const ok = await postPasskey(p, passkeyBody(p, assertion(authenticator, await freshChallenge(p), { counter: 11 })));
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect((await passkeyRow(authenticator))!.counter).toBe(11);
  });

  it("CSRF: a wrong token, a missing CSRF cookie, or a foreign Origin is 403, and spends nothing", async () => {
    const authenticator = await alicePasskey();
    const p = await pending();
    const signed = assertion(authenticator, p.challenge);

    const wrongToken = await postPasskey(p, { ...passkeyBody(p, signed), csrf_token: "not-the-token" }, { store: false });
    expect(wrongToken.status).toBe(403);
    expect(wrongToken.json.error).toBe("invalid_request");

    const emptyToken = await postPasskey(p, { ...passkeyBody(p, signed), csrf_token: "" }, { store: false });
    expect(emptyToken.status).toBe(403);

    // Another browser (no CSRF cookie) replaying the page's token.
    const stranger: Pending = { ...p, jar: new CookieJar() };
    const noCookie = await postPasskey(stranger, passkeyBody(p, signed), { store: false });
    expect(noCookie.status).toBe(403);

    // Refused by server.ts before the route (an HTML page) or by the route (JSON): 403 either way.
    for (const origin of ["https://evil.example", "null", `http://127.0.0.1:${server.port}`]) {
      const foreign = await postPasskey(p, passkeyBody(p, signed), { origin, store: false });
      expect(foreign.status, origin).toBe(403);
      expect(foreign.headers.getSetCookie().some((cookie) => cookie.includes("atrium_session"))).toBe(false);
    }

    // None of these spent the challenge or counted as a failed sign-in.
    const good = await postPasskey(p, passkeyBody(p, signed), { store: false });
    expect(good.status, JSON.stringify(good.body)).toBe(200);
  });

  it("malformed posts are 400 JSON, never 500", async () => {
    const authenticator = await alicePasskey();
    const p = await pending();
    const signed = assertion(authenticator, p.challenge);
    const { response: _omit, ...withoutResponse } = passkeyBody(p, signed);
    const bodies: [string, { raw?: string; body?: unknown; contentType?: string }][] = [
      ["not JSON", { raw: "{not json" }],
      ["empty body", { raw: "" }],
      ["JSON null", { raw: "null" }],
      ["JSON array", { raw: "[]" }],
      ["missing response", { body: withoutResponse }],
      ["response null", { body: passkeyBody(p, null) }],
      ["response a string", { body: passkeyBody(p, "abc") }],
      ["wrong credential type", { body: passkeyBody(p, { ...signed, type: "password" }) }],
      ["missing clientDataJSON", { body: passkeyBody(p, { ...signed, response: { ...signed.response, clientDataJSON: undefined } }) }],
      ["numeric signature", { body: passkeyBody(p, { ...signed, response: { ...signed.response, signature: 42 } }) }],
      ["huge id", { body: passkeyBody(p, { ...signed, id: "A".repeat(5000), rawId: "A".repeat(5000) }) }],
      ["missing request_uri", { body: { ...passkeyBody(p, signed), request_uri: undefined } }],
      ["request_uri a number", { body: { ...passkeyBody(p, signed), request_uri: 5 } }],
      ["form-encoded", { raw: new URLSearchParams({ request_uri: p.requestUri, client_id: CLIENT_ID, csrf_token: p.csrfToken }).toString(), contentType: "application/x-www-form-urlencoded" }],
      ["text/plain JSON", { raw: JSON.stringify(passkeyBody(p, signed)), contentType: "text/plain" }],
    ];
    for (const [label, input] of bodies) {
      const result = await postPasskey(p, input.body, { raw: input.raw, contentType: input.contentType, store: false });
      expect(result.status, `${label}: ${JSON.stringify(result.body)}`).toBe(400);
      expect(result.contentType, label).toMatch(/application\/json/);
      expect(result.json.error, label).toBe("invalid_request");
    }

    // Well-formed envelope, garbage inside the assertion: a passkey failure, still 400.
    const garbage: [string, AuthenticationResponseJSON][] = [
      ["clientDataJSON not base64 JSON", { ...signed, response: { ...signed.response, clientDataJSON: "!!!not-base64!!!" } }],
      ["clientDataJSON without challenge", { ...signed, response: { ...signed.response, clientDataJSON: Buffer.from("{}").toString("base64url") } }],
      [
        "challenge not a string",
        { ...signed, response: { ...signed.response, clientDataJSON: Buffer.from(JSON.stringify({ type: "webauthn.get", challenge: 5 })).toString("base64url") } },
      ],
    ];
    for (const [label, response] of garbage) {
      const result = await postPasskey(p, passkeyBody(p, response), { store: false, address: newAddress() });
      expect(result.status, `${label}: ${JSON.stringify(result.body)}`).toBe(400);
      expect(result.json.error, label).toBe("passkey_failed");
    }
    // An id that does not match rawId, or an unknown credential, on a live challenge.
    const mismatched = await postPasskey(p, passkeyBody(p, { ...assertion(authenticator, await freshChallenge(p)), rawId: "b3RoZXI" }), {
      store: false,
      address: newAddress(),
    });
    expect(mismatched.status, JSON.stringify(mismatched.body)).toBe(400);
    const unknown = new SoftAuthenticator();
    expectPasskeyFailure(await postPasskey(p, passkeyBody(p, assertion(unknown, await freshChallenge(p))), { store: false }), /not registered/);

    // Other methods.
    const put = await fetch(`${server.issuer}/oauth/passkey-auth`, {
      method: "PUT",
      headers: { "Content-Type": "application/json", origin: server.issuer },
      body: JSON.stringify(passkeyBody(p, signed)),
    });
    expect(put.status).toBeGreaterThanOrEqual(400);
    expect(put.status).toBeLessThan(500);

    // After all that, the untouched page challenge still signs in.
    const good = await postPasskey(p, passkeyBody(p, signed), { store: false });
    expect(good.status, JSON.stringify(good.body)).toBe(200);
  });

  it("sign-in throttle: repeated failures with one credential (from any address) lead to 429 with Retry-After, checked before the challenge is spent", async () => {
    const authenticator = await alicePasskey();
    const impostor = new SoftAuthenticator();
    const p = await pending();
    // Default ATRIUM_SIGN_IN_FREE_ATTEMPTS = 5. Each failure comes from a new
    // address, so only the credential's counter can add up.
    for (let i = 1; i <= 5; i++) {
      const result = await postPasskey(p, passkeyBody(p, assertion(authenticator, await freshChallenge(p), { signWith: impostor.privateKey })), {
        address: newAddress(),
        store: false,
      });
      expectPasskeyFailure(result, /could not be verified/);
    }
    // Five failures (the free attempts): the next attempt, even a good assertion, waits a second.
    const challenge = await freshChallenge(p);
    const good = assertion(authenticator, challenge);
    const blocked = await postPasskey(p, passkeyBody(p, good), { address: newAddress(), store: false });
    expect(blocked.status, JSON.stringify(blocked.body)).toBe(429);
    expect(blocked.json.error).toBe("temporarily_unavailable");
    expect(blocked.json.error_description).toMatch(/Too many sign-in attempts/);
    const retryAfter = Number(blocked.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(2);

    // After waiting, the same assertion (its challenge was not spent by the 429) signs in.
    clock.advance(retryAfter * 1000 + 100);
    const after = await postPasskey(p, passkeyBody(p, good), { address: newAddress(), store: false });
    expect(after.status, JSON.stringify(after.body)).toBe(200);
  });

  it("sign-in throttle: passkey failures from one address throttle that address (20 failures with 20 unknown credentials → 429)", async () => {
    const p = await pending();
    const address = newAddress();
    // An address checks four times an account's free attempts (5): it may be many people.
    for (let i = 1; i <= 20; i++) {
      const stranger = new SoftAuthenticator();
      expectPasskeyFailure(await postPasskey(p, passkeyBody(p, assertion(stranger, await freshChallenge(p))), { address, store: false }), /not registered/);
    }
    const authenticator = await alicePasskey();
    const blocked = await postPasskey(p, passkeyBody(p, assertion(authenticator, await freshChallenge(p))), { address, store: false });
    expect(blocked.status, JSON.stringify(blocked.body)).toBe(429);
    expect(blocked.headers.get("retry-after")).toMatch(/^\d+$/);
  });

  it("prompt=login: a passkey sign-in on the screen counts as the fresh sign-in, and allowing then needs no password", async () => {
    const authenticator = await alicePasskey();
    const p = await pending({ extra: { prompt: "login" } });
    const result = await postPasskey(p, passkeyBody(p, assertion(authenticator, p.challenge)));
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    expect(result.json.ok).toBe(true);
    // The person just authenticated for this very request; the screen the
    // JSON answer sends them back to should let them allow.
    const response = await allow(p);
    expect(response.status, visibleText(await response.clone().text()).slice(0, 400)).toBe(303);
    const location = redirectOf(response);
    expect(location.searchParams.get("code")).toBeTruthy();
  });
});
