import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPkce, DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { newBrowser, postForm, type Browser } from "../helpers/account.ts";
import { approveWithPassword, CookieJar } from "../helpers/consent.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";

/**
 * Issue 16, hole 5 (docs/decisions/0023b): the identity probe. A site registers itself as a client (any loopback or
 * published client will do), pushes prompt=none with login_hint=<a guessed handle>, and navigates its visitor to
 * the screen: the answer used to be consent_required when the visitor was that account (staying signed in) and
 * login_required otherwise, one navigation per guess, no click. Played here with real browsers' cookies (sessions
 * made by signing in on the account pages, staying signed in or not, one account or two) against a started server:
 * whatever a browser holds, a client the hinted account never allowed learns nothing from the answer.
 */

const SCOPE = "atproto transition:generic";
const PASSWORD = "a long enough password";
const PROBE_REDIRECT = "http://127.0.0.1/probe";
/** The prober's own client: a loopback client needs no registration. */
const PROBER = `http://localhost?${new URLSearchParams({ redirect_uri: PROBE_REDIRECT, scope: SCOPE })}`;
/** An app the visitors did allow, so that their browsers hold remembered consent (for another client). */
const TRUSTED = `http://localhost?${new URLSearchParams({ redirect_uri: "http://127.0.0.1/trusted", scope: SCOPE })}`;

let server: TestServer;
let prober: DpopClient;
let trusted: DpopClient;
const dids: Record<string, string> = {};
/** The browsers a visitor may arrive with. */
const browsers: Record<string, CookieJar> = {};

async function push(client: DpopClient, redirectUri: string, extra: Record<string, string>) {
  const pkce = createPkce();
  const par = await client.pushAuthorizationRequest({ redirect_uri: redirectUri, scope: SCOPE, state: "probe", code_challenge: pkce.challenge, code_challenge_method: "S256", ...extra });
  expect(par.status, JSON.stringify(par.body)).toBe(201);
  return { authorizeUrl: client.authorizeUrl(par.body.request_uri), verifier: pkce.verifier };
}

/** A browser signed in on the account pages to `names`, staying signed in or not; each then allows the trusted app. */
async function browserOf(names: string[], staySignedIn: boolean): Promise<CookieJar> {
  const browser: Browser & { csrfToken: string } = await newBrowser(server);
  for (const name of names) {
    const fields: Record<string, string> = { csrf_token: browser.csrfToken, identifier: `${name}.test`, password: PASSWORD, next: "/account" };
    if (staySignedIn) fields.stay_signed_in = "on";
    expect((await postForm(browser, "/account", fields)).status).toBe(303);
    await approveWithPassword((await push(trusted, "http://127.0.0.1/trusted", {})).authorizeUrl, new CookieJar(), `${name}.test`, PASSWORD);
  }
  return browser.jar;
}

/** What the prober's redirect URI receives when `jar`'s browser is sent to a prompt=none request. */
async function probe(jar: CookieJar, hint: string | undefined) {
  const { authorizeUrl } = await push(prober, PROBE_REDIRECT, hint === undefined ? { prompt: "none" } : { prompt: "none", login_hint: hint });
  const response = await fetch(authorizeUrl, { headers: { cookie: jar.header() }, redirect: "manual" });
  expect(response.status).toBe(303);
  const location = new URL(response.headers.get("location")!);
  expect(`${location.origin}${location.pathname}`).toBe(PROBE_REDIRECT);
  return { error: location.searchParams.get("error"), description: location.searchParams.get("error_description"), code: location.searchParams.get("code") };
}

beforeAll(async () => {
  server = await startTestServer();
  for (const name of ["alice", "bob"]) dids[name] = (await createAccount(server, { handle: `${name}.test`, email: `${name}@example.com`, password: PASSWORD })).did;
  prober = new DpopClient(server.issuer, await generateDpopKey(), PROBER);
  trusted = new DpopClient(server.issuer, await generateDpopKey(), TRUSTED);
  browsers["nobody signed in"] = new CookieJar();
  browsers["alice, staying signed in"] = await browserOf(["alice"], true);
  browsers["alice, not staying"] = await browserOf(["alice"], false);
  browsers["bob, staying signed in"] = await browserOf(["bob"], true);
  browsers["alice and bob, staying signed in"] = await browserOf(["alice", "bob"], true);
});
afterAll(() => server?.stop());

describe("prompt=none from a client the hinted account never allowed", () => {
  it("gets the same answer whatever the browser holds, for every guess in every spelling, all at once", async () => {
    const guesses = ["alice.test", "ALICE.TEST", "@Alice.Test", "alice@example.com", "ALICE@EXAMPLE.COM", "bob.test", "nobody.test", undefined];
    const probes = Object.entries(browsers).flatMap(([browser, jar]) => guesses.map((hint) => ({ browser, hint: hint ?? "(no hint)", jar, raw: hint })));
    probes.push(...Object.entries(browsers).map(([browser, jar]) => ({ browser, hint: dids.alice!, jar, raw: dids.alice })));
    const answers = await Promise.all(probes.map(async ({ browser, hint, jar, raw }) => ({ browser, hint, ...(await probe(jar, raw)) })));
    const distinct = new Set(answers.map(({ error, description, code }) => JSON.stringify({ error, description, code })));
    // One answer for every browser and every guess: the prober learns nothing of who is signed in here.
    expect([...distinct], JSON.stringify(answers.filter((answer) => answer.error !== "login_required"))).toEqual([
      JSON.stringify({ error: "login_required", description: "The user must sign in", code: null }),
    ]);
  });

  it("once the account allowed the client, its staying browser answers silently again, and only its own browser", async () => {
    const jar = await browserOf(["bob"], true);
    // Bob allows the prober's app himself, on its consent screen, in his own browser.
    const { authorizeUrl } = await push(prober, PROBE_REDIRECT, {});
    const allowed = await approveWithPassword(authorizeUrl, jar, "bob.test", PASSWORD, true);
    expect(allowed.searchParams.get("code")).toBeTruthy();
    expect((await probe(jar, "bob.test")).code).toBeTruthy();
    for (const [browser, other] of Object.entries(browsers)) {
      if (browser.includes("bob")) continue;
      expect(await probe(other, "bob.test"), browser).toEqual({ error: "login_required", description: "The user must sign in", code: null });
    }
  });
});
