import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPkce, DpopClient, generateDpopKey, type TokenSet } from "../../scripts/lib/dpop-client.ts";
import { CookieJar, openConsentPage, visibleText } from "../helpers/consent.ts";
import { ALICE, createAlice } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, loopbackClientId } from "../helpers/xrpc.ts";

/**
 * A declined email, remembered (issue 19, item 8; docs/decisions/0032): a person unticks "Share your email address"
 * and allows the rest. The token's scope lacks the email, getSession gives none, and the remembered consent records
 * the "no": the same app asking the same again is answered from it without a screen (prompt=none) and still without
 * the email, the screen it must show (prompt=consent) has the box unticked as it was left, and /account/apps says the
 * app was not given the email. Over HTTP, as a browser without JavaScript.
 */

const SCOPE = "atproto transition:generic";
const WITH_EMAIL = `${SCOPE} transition:email`;
const REDIRECT = "http://127.0.0.1/callback";

let server: TestServer;
let client: DpopClient;
let alice: { did: string };
/** Alice's browser: she ticks "Stay signed in on this device" on her first sign-in. */
const jar = new CookieJar();

beforeAll(async () => {
  server = await startTestServer();
  alice = await createAlice(server);
  client = new DpopClient(server.issuer, await generateDpopKey(), loopbackClientId(WITH_EMAIL));
});
afterAll(() => server?.stop());

type Pushed = { authorizeUrl: string; verifier: string; state: string };

async function push(extra: Record<string, string> = {}): Promise<Pushed> {
  const pkce = createPkce();
  const state = `state-${Math.random().toString(36).slice(2)}`;
  const par = await client.pushAuthorizationRequest({ redirect_uri: REDIRECT, scope: WITH_EMAIL, state, code_challenge: pkce.challenge, code_challenge_method: "S256", ...extra });
  expect(par.status, JSON.stringify(par.body)).toBe(201);
  return { authorizeUrl: client.authorizeUrl(par.body.request_uri), verifier: pkce.verifier, state };
}

/** Posts the consent form as the page would send it: `fields` holds the screen's own (email_choice, share_email, …). */
async function allow(pushed: Pushed, csrfToken: string, fields: Record<string, string>): Promise<URL> {
  const url = new URL(pushed.authorizeUrl);
  const form = new URLSearchParams({
    csrf_token: csrfToken,
    request_uri: url.searchParams.get("request_uri")!,
    client_id: url.searchParams.get("client_id")!,
    decision: "allow",
    ...fields,
  });
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", cookie: jar.header(), origin: server.issuer },
    body: form,
    redirect: "manual",
  });
  jar.store(response);
  expect(response.status, await response.clone().text()).toBe(303);
  return new URL(response.headers.get("location")!);
}

/** The code of a redirect back to the app, exchanged: the token response. */
async function tokensOf(location: URL, pushed: Pushed): Promise<TokenSet> {
  expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
  expect(location.searchParams.get("state")).toBe(pushed.state);
  const code = location.searchParams.get("code");
  expect(code, location.href).toBeTruthy();
  const exchanged = await client.exchangeCode(code!, pushed.verifier, REDIRECT);
  expect(exchanged.status, JSON.stringify(exchanged.body)).toBe(200);
  return exchanged.body;
}

async function sessionOf(tokens: TokenSet): Promise<Record<string, unknown>> {
  const result = await call<Record<string, unknown>>({ client, tokens, accessToken: tokens.access_token }, "com.atproto.server.getSession");
  expect(result.status).toBe(200);
  return result.body;
}

/** The "Share your email address" box of a page: present, and whether it is ticked. */
function shareEmailBox(html: string): { ticked: boolean } {
  const input = /<input[^>]*id="share_email"[^>]*>/.exec(html)?.[0];
  expect(input, "the page has the email box").toBeDefined();
  return { ticked: /\schecked(="")?[\s/>]/.test(input!) };
}

const emailValues = (scope: string) => scope.split(" ").filter((value) => value === "transition:email" || value.startsWith("account:email"));

describe("a declined email is remembered (docs/decisions/0032)", () => {
  it("unticked: the token's scope lacks the email, getSession gives none, and the rest of the grant works", async () => {
    const pushed = await push();
    const page = await openConsentPage(pushed.authorizeUrl, jar);
    expect(page.status).toBe(200);
    expect(shareEmailBox(page.html)).toEqual({ ticked: true });
    const location = await allow(pushed, page.csrfToken!, { identifier: ALICE.handle, password: ALICE.password, stay_signed_in: "on", email_choice: "1" });
    const tokens = await tokensOf(location, pushed);
    expect(tokens.scope.split(" ").sort()).toEqual(SCOPE.split(" ").sort());
    expect(emailValues(tokens.scope)).toEqual([]);
    const session = await sessionOf(tokens);
    expect(session).toMatchObject({ did: alice.did, handle: ALICE.handle, active: true });
    expect(session).not.toHaveProperty("email");
    expect(session).not.toHaveProperty("emailConfirmed");
    // transition:generic still works: a record is written.
    const written = await call({ client, tokens, accessToken: tokens.access_token }, "com.atproto.repo.createRecord", {
      json: { repo: alice.did, collection: "app.bsky.feed.post", record: { $type: "app.bsky.feed.post", text: "hello", createdAt: new Date().toISOString() } },
    });
    expect(written.status, JSON.stringify(written.body)).toBe(200);
  });

  it("the same app asking the same again with prompt=none is answered from the remembered consent without a screen, still without the email", async () => {
    const pushed = await push({ prompt: "none" });
    const response = await fetch(pushed.authorizeUrl, { headers: { cookie: jar.header() }, redirect: "manual" });
    expect(response.status).toBe(303);
    const tokens = await tokensOf(new URL(response.headers.get("location")!), pushed);
    expect(emailValues(tokens.scope)).toEqual([]);
    expect(await sessionOf(tokens)).not.toHaveProperty("email");
  });

  it("a screen that must ask again (prompt=consent) shows the box unticked as it was left; Allow as shown grants no email", async () => {
    const pushed = await push({ prompt: "consent" });
    const page = await openConsentPage(pushed.authorizeUrl, jar);
    expect(page.status).toBe(200);
    expect(shareEmailBox(page.html)).toEqual({ ticked: false });
    // Not the "allowed before" screen: prompt=consent asks.
    expect(visibleText(page.html)).not.toContain("You have already allowed");
    const tokens = await tokensOf(await allow(pushed, page.csrfToken!, { account: alice.did, email_choice: "1" }), pushed);
    expect(emailValues(tokens.scope)).toEqual([]);
  });

  it("the one-click screen of a remembered consent keeps the box unticked; a form without the box keeps the remembered no", async () => {
    const pushed = await push();
    const page = await openConsentPage(pushed.authorizeUrl, jar);
    // The declined email counts as answered: the screen says the access was allowed before.
    expect(visibleText(page.html)).toContain("You have already allowed");
    expect(shareEmailBox(page.html)).toEqual({ ticked: false });
    // A form that did not offer the box (no email_choice) declines what was declined before.
    const tokens = await tokensOf(await allow(pushed, page.csrfToken!, { account: alice.did }), pushed);
    expect(emailValues(tokens.scope)).toEqual([]);
  });

  it("/account/apps says the app was not given the email", async () => {
    const response = await fetch(`${server.issuer}/account/apps`, { headers: { cookie: jar.header() }, redirect: "manual" });
    expect(response.status).toBe(200);
    expect(visibleText(await response.text())).toContain("You did not give it your email address.");
  });

  it("ticked later: the email is granted, getSession gives it, and the apps page no longer says it was not given", async () => {
    const pushed = await push({ prompt: "consent" });
    const page = await openConsentPage(pushed.authorizeUrl, jar);
    const tokens = await tokensOf(await allow(pushed, page.csrfToken!, { account: alice.did, email_choice: "1", share_email: "on" }), pushed);
    expect(emailValues(tokens.scope)).toEqual(["transition:email"]);
    expect(await sessionOf(tokens)).toMatchObject({ email: ALICE.email });
    const apps = await fetch(`${server.issuer}/account/apps`, { headers: { cookie: jar.header() }, redirect: "manual" });
    expect(visibleText(await apps.text())).not.toContain("You did not give it your email address.");
    // And the next prompt=none gets the email, as the person now allowed it.
    const again = await push({ prompt: "none" });
    const silent = await fetch(again.authorizeUrl, { headers: { cookie: jar.header() }, redirect: "manual" });
    expect(emailValues((await tokensOf(new URL(silent.headers.get("location")!), again)).scope)).toEqual(["transition:email"]);
  });
});
