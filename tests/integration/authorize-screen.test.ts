import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPkce, DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { approveWithPassword, CookieJar, openConsentPage, submitConsent, visibleText } from "../helpers/consent.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";

const SCOPE = "atproto transition:generic";
const DECLARED_REDIRECT = "http://127.0.0.1/callback";
const CLIENT_ID = `http://localhost?${new URLSearchParams({ redirect_uri: DECLARED_REDIRECT, scope: SCOPE })}`;
// RFC 8252 §7.3: any port may be used with a loopback redirect URI.
const REDIRECT = "http://127.0.0.1:47123/callback";
const HANDLE = "alice.test";
const PASSWORD = "correct horse battery";

const SCOPES_SUPPORTED = "atproto repo rpc blob account identity transition:generic transition:email transition:chat.bsky".split(" ");

let server: TestServer;
let account: { did: string; handle: string };
let client: DpopClient;

beforeAll(async () => {
  server = await startTestServer();
  account = await createAccount(server, { handle: HANDLE, email: "alice@example.com", password: PASSWORD });
  client = new DpopClient(server.issuer, await generateDpopKey(), CLIENT_ID);
});
afterAll(() => server?.stop());

/** Pushes a request for the loopback client and returns the screen's URL. */
async function push(extra: Record<string, string> = {}, state = "screen-state"): Promise<{ authorizeUrl: string; verifier: string }> {
  const pkce = createPkce();
  const par = await client.pushAuthorizationRequest({
    redirect_uri: REDIRECT,
    scope: SCOPE,
    state,
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
    ...extra,
  });
  expect(par.status, JSON.stringify(par.body)).toBe(201);
  return { authorizeUrl: client.authorizeUrl(par.body.request_uri), verifier: pkce.verifier };
}

function expectHtmlPage(response: Response) {
  expect(response.headers.get("content-type")).toMatch(/text\/html/);
  expect(response.headers.get("location")).toBeNull();
}

function expectScreenSecurityHeaders(headers: Headers) {
  const csp = headers.get("content-security-policy");
  expect(csp).toBeTruthy();
  expect(csp).toMatch(/frame-ancestors 'none'/);
  expect(headers.get("referrer-policy")).toBe("no-referrer");
  expect(headers.get("x-content-type-options")).toBe("nosniff");
  expect(headers.get("access-control-allow-origin")).toBeNull();
}

function redirectOf(response: Response): URL {
  const location = response.headers.get("location");
  expect(response.status).toBe(303);
  expect(location).toBeTruthy();
  return new URL(location!);
}


describe("the authorization screen", () => {
  it("rejects a conventional (non-PAR) authorization request with a 400 page and no redirect", async () => {
    const url = new URL(`${server.issuer}/oauth/authorize`);
    url.searchParams.set("response_type", "code");
    url.searchParams.set("client_id", CLIENT_ID);
    url.searchParams.set("redirect_uri", REDIRECT);
    url.searchParams.set("state", "s");
    const response = await fetch(url, { redirect: "manual" });
    expect(response.status).toBe(400);
    expectHtmlPage(response);
    expectScreenSecurityHeaders(response.headers);
    const html = await response.text();
    expect(html).toMatch(/<html/i);
  });

  it("rejects an unknown request_uri with a 400 page", async () => {
    const url = new URL(`${server.issuer}/oauth/authorize`);
    url.searchParams.set("client_id", CLIENT_ID);
    url.searchParams.set("request_uri", "urn:ietf:params:oauth:request_uri:req-this-was-never-issued");
    const response = await fetch(url, { redirect: "manual" });
    expect(response.status).toBe(400);
    expectHtmlPage(response);
    expect(await response.text()).toMatch(/expired|not valid|already used/i);
  });

  it("RFC 9126 §4: a request_uri without its client_id, or with another client's, is refused with a 400 page (GET and POST)", async () => {
    const { authorizeUrl } = await push();
    const withoutClient = new URL(authorizeUrl);
    withoutClient.searchParams.delete("client_id");
    const get = await fetch(withoutClient, { redirect: "manual" });
    expect(get.status).toBe(400);
    expectHtmlPage(get);
    expect(visibleText(await get.text())).toMatch(/The link is incomplete.[\s\S]*The client_id parameter is missing./);
    // Another client's id ends the request (tests/integration/ways-back.test.ts): on a request of its own.
    const otherClient = new URL((await push()).authorizeUrl);
    otherClient.searchParams.set("client_id", `http://localhost?${new URLSearchParams({ redirect_uri: DECLARED_REDIRECT, scope: "atproto" })}`);
    expect((await fetch(otherClient, { redirect: "manual" })).status).toBe(400);
    // A form post that leaves client_id out is refused the same way, and the request stays usable.
    const jar = new CookieJar();
    const page = await openConsentPage(authorizeUrl, jar);
    const form = new URLSearchParams({ csrf_token: page.csrfToken!, request_uri: new URL(authorizeUrl).searchParams.get("request_uri")!, decision: "deny" });
    const post = await fetch(withoutClient, { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded", cookie: jar.header(), origin: server.issuer }, body: form, redirect: "manual" });
    expect(post.status).toBe(400);
    expect(post.headers.get("location")).toBeNull();
    expect((await openConsentPage(authorizeUrl, jar)).status).toBe(200);
  });

  it("shows who asks, where the person returns, Allow and Deny, and the scope in plain words", async () => {
    const { authorizeUrl } = await push();
    const response = await fetch(authorizeUrl, { redirect: "manual" });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/text\/html/);
    expectScreenSecurityHeaders(response.headers);
    expect(response.headers.get("cache-control")).toMatch(/no-store/);
    const text = visibleText(await response.text());
    // A loopback client has no name or web host: the screen says it runs on this device.
    expect(text).toMatch(/this device/i);
    expect(text).toContain(REDIRECT);
    expect(text).toMatch(/\bAllow\b/);
    expect(text).toMatch(/\bDeny\b/);
    expect(text).toContain("Know who you are");
    expect(text).toMatch(/Act on your account/);
  });

  it("Deny needs no password and redirects with access_denied, state and iss", async () => {
    const { authorizeUrl } = await push({}, "deny-state");
    const jar = new CookieJar();
    const page = await openConsentPage(authorizeUrl, jar);
    expect(page.status).toBe(200);
    const response = await submitConsent(authorizeUrl, jar, { decision: "deny", csrfToken: page.csrfToken });
    const location = redirectOf(response);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.searchParams.get("error")).toBe("access_denied");
    expect(location.searchParams.get("state")).toBe("deny-state");
    expect(location.searchParams.get("iss")).toBe(server.issuer);
    expect(location.searchParams.get("code")).toBeNull();
  });

  it("a wrong password gives a 400 page with an error, never echoes the password, and the request stays usable", async () => {
    const { authorizeUrl, verifier } = await push();
    const jar = new CookieJar();
    const page = await openConsentPage(authorizeUrl, jar);
    const wrongPassword = "Wr0ng-Pa55word-Echo-Check";
    const wrong = await submitConsent(authorizeUrl, jar, { decision: "allow", identifier: HANDLE, password: wrongPassword, csrfToken: page.csrfToken });
    expect(wrong.status).toBe(400);
    expectHtmlPage(wrong);
    expectScreenSecurityHeaders(wrong.headers);
    const html = await wrong.text();
    expect(html).toMatch(/role="alert"/);
    expect(visibleText(html)).toMatch(/not right|wrong|incorrect/i);
    expect(html).not.toContain(wrongPassword);

    const right = await submitConsent(authorizeUrl, jar, { decision: "allow", identifier: HANDLE, password: PASSWORD, csrfToken: page.csrfToken });
    const location = redirectOf(right);
    const code = location.searchParams.get("code");
    expect(code).toBeTruthy();
    const tokens = await client.exchangeCode(code!, verifier, REDIRECT);
    expect(tokens.status).toBe(200);
    expect(tokens.body.sub).toBe(account.did);
  });

  describe("cross-site form posts are refused", () => {
    it("forged CSRF token → 403, no redirect", async () => {
      const { authorizeUrl } = await push();
      const jar = new CookieJar();
      const page = await openConsentPage(authorizeUrl, jar);
      const forged = `${page.csrfToken!.slice(0, -4)}AAAA` === page.csrfToken ? `${page.csrfToken!.slice(0, -4)}BBBB` : `${page.csrfToken!.slice(0, -4)}AAAA`;
      const response = await submitConsent(authorizeUrl, jar, { decision: "allow", identifier: HANDLE, password: PASSWORD, csrfToken: forged });
      expect(response.status).toBe(403);
      expectHtmlPage(response);

      // The refused post did not consume the request.
      const ok = await submitConsent(authorizeUrl, jar, { decision: "deny", csrfToken: page.csrfToken });
      expect(ok.status).toBe(303);
    });

    it("missing CSRF cookie → 403", async () => {
      const { authorizeUrl } = await push();
      const page = await openConsentPage(authorizeUrl, new CookieJar());
      const response = await submitConsent(authorizeUrl, new CookieJar(), { decision: "allow", identifier: HANDLE, password: PASSWORD, csrfToken: page.csrfToken });
      expect(response.status).toBe(403);
      expectHtmlPage(response);
    });

    it("foreign Origin → 403", async () => {
      const { authorizeUrl } = await push();
      const jar = new CookieJar();
      const page = await openConsentPage(authorizeUrl, jar);
      const response = await submitConsent(authorizeUrl, jar, {
        decision: "allow",
        identifier: HANDLE,
        password: PASSWORD,
        csrfToken: page.csrfToken,
        origin: "https://evil.example",
      });
      // Refused either way: no redirect to the client, no session.
      expect(response.headers.get("location")).toBeNull();
      expect(response.headers.get("set-cookie") ?? "").not.toMatch(/atrium_session=[^;]/);
      // docs/architecture.md, "Browser security": the Origin check answers with the same 403 page as a bad CSRF token.
      expect(response.status).toBe(403);
      expectHtmlPage(response);
    });
  });

  describe("browser sessions and prompt", () => {
    it("after one sign-in, the same browser can allow without a password", async () => {
      const jar = new CookieJar();
      const first = await push();
      await approveWithPassword(first.authorizeUrl, jar, HANDLE, PASSWORD);

      const second = await push({}, "second-state");
      const page = await openConsentPage(second.authorizeUrl, jar);
      expect(page.status).toBe(200);
      expect(visibleText(page.html)).toContain(`@${HANDLE}`);
      expect(page.html).not.toMatch(/name="password"/);
      const response = await submitConsent(second.authorizeUrl, jar, { decision: "allow", csrfToken: page.csrfToken });
      const location = redirectOf(response);
      expect(location.searchParams.get("state")).toBe("second-state");
      expect(location.searchParams.get("iss")).toBe(server.issuer);
      const code = location.searchParams.get("code");
      expect(code).toBeTruthy();
      const tokens = await client.exchangeCode(code!, second.verifier, REDIRECT);
      expect(tokens.status).toBe(200);
      expect(tokens.body.sub).toBe(account.did);
    });

    it("prompt=login asks for the password even with a session", async () => {
      const jar = new CookieJar();
      const first = await push();
      await approveWithPassword(first.authorizeUrl, jar, HANDLE, PASSWORD);

      const { authorizeUrl } = await push({ prompt: "login" });
      const page = await openConsentPage(authorizeUrl, jar);
      expect(page.status).toBe(200);
      expect(page.html).toMatch(/name="password"/);
      const response = await submitConsent(authorizeUrl, jar, { decision: "allow", csrfToken: page.csrfToken });
      expect(response.status).toBe(400);
      expect(response.headers.get("location")).toBeNull();

      // With the password it goes through.
      const ok = await submitConsent(authorizeUrl, jar, { decision: "allow", identifier: HANDLE, password: PASSWORD, csrfToken: page.csrfToken });
      expect(redirectOf(ok).searchParams.get("code")).toBeTruthy();
    });

    it("prompt=none without a session redirects with login_required", async () => {
      const { authorizeUrl } = await push({ prompt: "none" }, "none-state");
      const response = await fetch(authorizeUrl, { redirect: "manual" });
      const location = redirectOf(response);
      expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
      expect(location.searchParams.get("error")).toBe("login_required");
      expect(location.searchParams.get("state")).toBe("none-state");
      expect(location.searchParams.get("iss")).toBe(server.issuer);
    });

    it("login_hint prefills the identifier field", async () => {
      const { authorizeUrl } = await push({ login_hint: HANDLE });
      const page = await openConsentPage(authorizeUrl, new CookieJar());
      expect(page.status).toBe(200);
      const input = /<input[^>]*name="identifier"[^>]*>/.exec(page.html)?.[0];
      expect(input).toBeTruthy();
      expect(input).toContain(`value="${HANDLE}"`);
    });
  });

  describe("login_hint naming another account than the signed-in one (OIDC Core §3.1.2.1)", () => {
    const BOB = { handle: "bob.test", email: "bob@example.com", password: "bob's own password" };
    let bobDid: string;
    let bobsBrowser: CookieJar;

    beforeAll(async () => {
      bobDid = (await createAccount(server, BOB)).did;
      // Bob signs in once in this browser and allows the app, so his consent is remembered.
      bobsBrowser = new CookieJar();
      await approveWithPassword((await push()).authorizeUrl, bobsBrowser, BOB.handle, BOB.password);
    });

    const aliceSpellings = () => [HANDLE, HANDLE.toUpperCase(), `@${HANDLE}`, "alice@example.com", "ALICE@EXAMPLE.COM", account.did];

    it("prompt=none with a hint for Alice in Bob's browser gets login_required, never Bob's code (every spelling, all at once)", async () => {
      const pushed = await Promise.all(aliceSpellings().map((hint, i) => push({ prompt: "none", login_hint: hint }, `hint-none-${i}`)));
      const responses = await Promise.all(pushed.map(({ authorizeUrl }) => fetch(authorizeUrl, { headers: { cookie: bobsBrowser.header() }, redirect: "manual" })));
      for (const [i, response] of responses.entries()) {
        const location = redirectOf(response);
        expect(location.searchParams.get("error"), aliceSpellings()[i]).toBe("login_required");
        expect(location.searchParams.get("code")).toBeNull();
        expect(location.searchParams.get("state")).toBe(`hint-none-${i}`);
      }
    });

    it("without prompt, the screen asks Alice to sign in; Allow with Bob's session alone issues nothing", async () => {
      const { authorizeUrl, verifier } = await push({ login_hint: "Alice.Test" });
      const page = await openConsentPage(authorizeUrl, bobsBrowser);
      expect(page.status).toBe(200);
      expect(page.html).toMatch(/name="password"/);
      expect(visibleText(page.html)).not.toContain("@bob.test");
      const refused = await submitConsent(authorizeUrl, bobsBrowser, { decision: "allow", csrfToken: page.csrfToken });
      expect(refused.status).toBe(400);
      expect(refused.headers.get("location")).toBeNull();
      // Alice signing in on the same screen gets Alice's code.
      const ok = await submitConsent(authorizeUrl, bobsBrowser, { decision: "allow", identifier: HANDLE, password: PASSWORD, csrfToken: page.csrfToken });
      const tokens = await client.exchangeCode(redirectOf(ok).searchParams.get("code")!, verifier, REDIRECT);
      expect(tokens.body.sub).toBe(account.did);
    });

    it("a hint naming the signed-in account by handle or DID, in any spelling, is that account: prompt=none succeeds silently", async () => {
      // Alice signed in above in that browser too: sign Bob in again in a fresh one, staying signed in (docs/decisions/0020).
      const browser = new CookieJar();
      await approveWithPassword((await push()).authorizeUrl, browser, BOB.handle, BOB.password, true);
      for (const hint of ["bob.test", "BOB.TEST", "@bob.test", bobDid]) {
        const { authorizeUrl, verifier } = await push({ prompt: "none", login_hint: hint });
        const response = await fetch(authorizeUrl, { headers: { cookie: browser.header() }, redirect: "manual" });
        const code = redirectOf(response).searchParams.get("code");
        expect(code, hint).toBeTruthy();
        expect((await client.exchangeCode(code!, verifier, REDIRECT)).body.sub).toBe(bobDid);
      }
      // An email hints only on a screen the person sees: silently, it would confirm a guessed email to the app.
      const { authorizeUrl } = await push({ prompt: "none", login_hint: "Bob@Example.com" });
      const response = await fetch(authorizeUrl, { headers: { cookie: browser.header() }, redirect: "manual" });
      expect(redirectOf(response).searchParams.get("error")).toBe("login_required");
    });
  });

  it("response_mode=fragment puts code, state and iss in the fragment", async () => {
    const { authorizeUrl, verifier } = await push({ response_mode: "fragment" }, "fragment-state");
    const location = await approveWithPassword(authorizeUrl, new CookieJar(), HANDLE, PASSWORD);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.search).toBe("");
    const fragment = new URLSearchParams(location.hash.slice(1));
    expect(fragment.get("state")).toBe("fragment-state");
    expect(fragment.get("iss")).toBe(server.issuer);
    const code = fragment.get("code");
    expect(code).toBeTruthy();
    expect((await client.exchangeCode(code!, verifier, REDIRECT)).status).toBe(200);
  });
});

describe("discovery and public endpoints", () => {
  it("/.well-known/oauth-authorization-server has every field the contract names (docs/architecture.md)", async () => {
    const response = await fetch(`${server.issuer}/.well-known/oauth-authorization-server`);
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    const metadata = (await response.json()) as Record<string, unknown>;
    const issuer = server.issuer;
    expect(issuer).not.toMatch(/\/$/);
    expect(metadata).toMatchObject({
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      pushed_authorization_request_endpoint: `${issuer}/oauth/par`,
      require_pushed_authorization_requests: true,
      revocation_endpoint: `${issuer}/oauth/revoke`,
      userinfo_endpoint: `${issuer}/oauth/userinfo`,
      jwks_uri: `${issuer}/oauth/jwks`,
      response_types_supported: ["code"],
      response_modes_supported: ["query", "fragment"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["none", "private_key_jwt"],
      token_endpoint_auth_signing_alg_values_supported: ["ES256"],
      dpop_signing_alg_values_supported: ["ES256"],
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true,
      subject_types_supported: ["public"],
    });
    expect(metadata.scopes_supported).toEqual(SCOPES_SUPPORTED);
    expect(metadata.scopes_supported).not.toContain("include");
    expect(metadata).not.toHaveProperty("introspection_endpoint");
  });

  it("/.well-known/oauth-protected-resource matches the contract (docs/architecture.md)", async () => {
    const response = await fetch(`${server.issuer}/.well-known/oauth-protected-resource`);
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    const metadata = (await response.json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({
      resource: server.issuer,
      authorization_servers: [server.issuer],
      bearer_methods_supported: ["header"],
    });
    expect(metadata.scopes_supported).toEqual(SCOPES_SUPPORTED);
  });

  it("/oauth/jwks is an empty key set", async () => {
    const response = await fetch(`${server.issuer}/oauth/jwks`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ keys: [] });
  });

  it("resolveHandle resolves a local handle and refuses unknown or missing handles", async () => {
    const ok = await fetch(`${server.issuer}/xrpc/com.atproto.identity.resolveHandle?handle=${HANDLE}`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBe("*");
    expect(await ok.json()).toEqual({ did: account.did });

    for (const query of ["?handle=nobody.test", ""]) {
      const refused = await fetch(`${server.issuer}/xrpc/com.atproto.identity.resolveHandle${query}`);
      expect(refused.status, query).toBe(400);
      const body = (await refused.json()) as { error?: unknown; message?: unknown };
      expect(body.error).toBe("InvalidRequest");
      expect(typeof body.message).toBe("string");
      expect((body.message as string).length).toBeGreaterThan(0);
    }
  });

  it("describeServer answers with the server DID and its user domains", async () => {
    const response = await fetch(`${server.issuer}/xrpc/com.atproto.server.describeServer`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { did?: unknown; availableUserDomains?: unknown };
    expect(body.did).toMatch(/^did:/);
    expect(Array.isArray(body.availableUserDomains)).toBe(true);
  });
});
