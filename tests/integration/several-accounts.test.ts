import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { createPkce, DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { newBrowser, openPage, pageText, postForm, type Browser } from "../helpers/account.ts";
import { CookieJar, openConsentPage, submitConsent } from "../helpers/consent.ts";
import { execute, rowsOf } from "../helpers/databases.ts";
import { CLIENT_ID } from "../helpers/flow.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";

/**
 * Several accounts in one browser (docs/decisions/0020): one session per account, "Stay signed in on this device"
 * (a session cookie without it, Max-Age with it), the chooser on the account pages and the consent screen,
 * prompt=select_account / none / login, "Use another account" adding an account, sign-out per account or all, the
 * account pages acting on the account a form names, and the recent-authentication rule per account.
 */

const REDIRECT = "http://127.0.0.1:47555/callback";
const PASSWORD = "a long enough password";
const HOUR = 60 * 60 * 1000;

let server: TestServer;
let client: DpopClient;
const dids: Record<string, string> = {};

beforeAll(async () => {
  server = await startTestServer();
  for (const name of ["alice", "bob", "carol"]) dids[name] = (await createAccount(server, { handle: `${name}.test`, email: `${name}@example.com`, password: PASSWORD })).did;
  client = new DpopClient(server.issuer, await generateDpopKey(), CLIENT_ID);
});
afterAll(() => server?.stop());

type Signed = Browser & { csrfToken: string };

/** Signs `name` in on /account in `browser` (adding an account when another is signed in), with or without "Stay signed in". */
async function signIn(browser: Signed, name: string, staySignedIn: boolean): Promise<string[]> {
  const fields: Record<string, string> = { csrf_token: browser.csrfToken, identifier: `${name}.test`, password: PASSWORD, next: "/account" };
  if (staySignedIn) fields.stay_signed_in = "on";
  const response = await fetch(`${server.issuer}/account`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", cookie: browser.jar.header(), origin: server.issuer },
    body: new URLSearchParams(fields),
    redirect: "manual",
  });
  expect(response.status).toBe(303);
  browser.jar.store(response);
  return response.headers.getSetCookie();
}

async function sessionsOf(name: string) {
  return rowsOf<{ idHash: string; staySignedIn: number | boolean; createdAt: number; expiresAt: number }>(
    server.database(),
    sql`SELECT "idHash", "staySignedIn", "createdAt", "expiresAt" FROM "BrowserSession" WHERE "accountDid" = ${dids[name]!}`,
  );
}

async function push(extra: Record<string, string> = {}, state = `s-${Math.random().toString(36).slice(2)}`) {
  const pkce = createPkce();
  const par = await client.pushAuthorizationRequest({ redirect_uri: REDIRECT, scope: "atproto transition:generic", state, code_challenge: pkce.challenge, code_challenge_method: "S256", ...extra });
  expect(par.status, JSON.stringify(par.body)).toBe(201);
  return { authorizeUrl: client.authorizeUrl(par.body.request_uri), verifier: pkce.verifier, state };
}

function location(response: Response): URL {
  expect(response.status).toBe(303);
  return new URL(response.headers.get("location")!, server.issuer);
}

async function subOf(response: Response, verifier: string): Promise<string> {
  const code = location(response).searchParams.get("code");
  expect(code).toBeTruthy();
  const tokens = await client.exchangeCode(code!, verifier, REDIRECT);
  expect(tokens.status).toBe(200);
  return tokens.body.sub;
}

describe("Stay signed in on this device", () => {
  it("off: a session cookie without Max-Age and a 12-hour session; on: Max-Age and the long lifetime", async () => {
    const browser = await newBrowser(server);
    const short = (await signIn(browser, "alice", false)).find((cookie) => cookie.startsWith("atrium_session="))!;
    expect(short).toMatch(/HttpOnly/);
    expect(short).not.toMatch(/Max-Age/i);
    const [aliceSession] = await sessionsOf("alice");
    expect(Boolean(aliceSession!.staySignedIn)).toBe(false);
    expect(aliceSession!.expiresAt - aliceSession!.createdAt).toBe(12 * HOUR);

    const kept = (await signIn(browser, "bob", true)).find((cookie) => cookie.startsWith("atrium_session_kept="))!;
    expect(kept).toMatch(/Max-Age=2592000/);
    const [bobSession] = await sessionsOf("bob");
    expect(Boolean(bobSession!.staySignedIn)).toBe(true);
    expect(bobSession!.expiresAt - bobSession!.createdAt).toBe(30 * 24 * HOUR);
    // Adding Bob left Alice signed in, in the session cookie.
    expect(browser.jar.get("atrium_session")).toBeTruthy();
    expect(await sessionsOf("alice")).toHaveLength(1);
    await postForm(browser, "/account/sign-out", { csrf_token: browser.csrfToken, all: "1" });
  });
});

describe("the account pages with several accounts", () => {
  it("the chooser, switching, explicit forms, sign-out per account and of all", async () => {
    const browser = await newBrowser(server);
    await signIn(browser, "alice", false);
    await signIn(browser, "bob", true);
    // The account just signed in is the one the pages act on, and the page says so.
    const overview = pageText((await openPage(browser, "/account")).html);
    expect(overview).toContain("Managing @bob.test");
    expect(overview).toContain("Switch to @alice.test");

    const chooser = pageText((await openPage(browser, "/account?choose=1")).html);
    expect(chooser).toContain("Choose an account");
    expect(chooser).toContain("Continue as @alice.test");
    expect(chooser).toContain("Continue as @bob.test");
    expect(chooser).toContain("Use another account");

    const chosen = await postForm(browser, "/account", { csrf_token: browser.csrfToken, intent: "choose", account: dids.alice!, next: "/account/sessions" });
    expect(chosen.location).toBe("/account/sessions");
    expect(pageText((await openPage(browser, "/account/sessions")).html)).toContain("Managing @alice.test");

    // A form shown for Bob acts for Bob, whichever account is chosen now: signing out of Bob leaves Alice.
    const out = await postForm(browser, "/account/sign-out", { csrf_token: browser.csrfToken, account: dids.bob! });
    expect(out.status).toBe(303);
    expect(await sessionsOf("bob")).toHaveLength(0);
    expect(await sessionsOf("alice")).toHaveLength(1);
    expect(pageText((await openPage(browser, "/account")).html)).toContain("Managing @alice.test");

    // A form naming an account not signed in here acts for nobody.
    const foreign = await postForm(browser, "/account/sessions", { csrf_token: browser.csrfToken, account: dids.carol!, intent: "sign_out_others" });
    expect(foreign.status).toBe(303);
    expect(foreign.location).toMatch(/^\/account\?next=/);

    await signIn(browser, "carol", false);
    await postForm(browser, "/account/sign-out", { csrf_token: browser.csrfToken, all: "1" });
    expect([...(await sessionsOf("alice")), ...(await sessionsOf("carol"))]).toHaveLength(0);
    expect((await openPage(browser, "/account")).html).toMatch(/name="password"/);
  });

  it("several accounts and none chosen (a new browser session): the pages ask which one", async () => {
    const browser = await newBrowser(server);
    await signIn(browser, "alice", true);
    await signIn(browser, "bob", true);
    // The browser restarted: the chosen account (a session cookie) is gone, the kept sessions are not.
    const restarted: Signed = { ...browser, jar: new CookieJar() };
    restarted.jar.store(new Response(null, { headers: { "Set-Cookie": `atrium_session_kept=${browser.jar.get("atrium_session_kept")!}` } }));
    const apps = await openPage(restarted, "/account/apps");
    expect(apps.status).toBe(303);
    expect(apps.location).toBe("/account?choose=1&next=%2Faccount%2Fapps");
    const page = await openPage(restarted, "/account");
    expect(pageText(page.html)).toContain("Choose an account");
    await postForm(restarted, "/account/sign-out", { csrf_token: page.csrfToken!, all: "1" });
  });

  it("the recent-authentication rule is per account (docs/decisions/0007)", async () => {
    const browser = await newBrowser(server);
    await signIn(browser, "alice", false);
    await signIn(browser, "bob", false);
    // Alice signed in long ago; Bob just now.
    await execute(server.database(), sql`UPDATE "BrowserSession" SET "authenticatedAt" = ${at(Date.now() - HOUR)} WHERE "accountDid" = ${dids.alice!}`);
    await postForm(browser, "/account", { csrf_token: browser.csrfToken, intent: "choose", account: dids.alice!, next: "/account/passkeys" });
    expect(pageText((await openPage(browser, "/account/passkeys")).html)).toContain("Confirm it's you");
    await postForm(browser, "/account", { csrf_token: browser.csrfToken, intent: "choose", account: dids.bob!, next: "/account/passkeys" });
    expect(pageText((await openPage(browser, "/account/passkeys")).html)).not.toContain("Confirm it's you");
    // The known-device cookie holds an entry for each account (docs/decisions/0009).
    expect(decodeURIComponent(browser.jar.get("atrium_device")!).split("~")).toHaveLength(2);
    await postForm(browser, "/account/sign-out", { csrf_token: browser.csrfToken, all: "1" });
  });
});

describe("the consent screen with several accounts", () => {
  let jar: CookieJar;

  beforeAll(async () => {
    const browser = await newBrowser(server);
    await signIn(browser, "alice", false);
    await signIn(browser, "bob", true);
    jar = browser.jar;
  });

  it("shows the chooser; choosing an account and Allow issue that account's code", async () => {
    const { authorizeUrl, verifier } = await push();
    const page = await openConsentPage(authorizeUrl, jar);
    const text = pageText(page.html);
    expect(text).toContain("Choose an account to give");
    expect(text).toContain("Continue as @alice.test");
    expect(text).toContain("Continue as @bob.test");
    expect(page.html).not.toMatch(/name="decision" value="allow"/);

    const chosen = location(await submitConsent(authorizeUrl, jar, { decision: "allow", chooseAccount: dids.bob!, csrfToken: page.csrfToken }));
    expect(chosen.searchParams.get("account")).toBe(dids.bob);
    const screen = await openConsentPage(chosen.href, jar);
    expect(pageText(screen.html)).toContain("Signed in as @bob.test");
    expect(pageText(screen.html)).toContain("Choose another account");
    expect(await subOf(await submitConsent(authorizeUrl, jar, { decision: "allow", account: dids.bob!, csrfToken: page.csrfToken }), verifier)).toBe(dids.bob);
  });

  it("Allow naming no account, or one not signed in here, issues nothing", async () => {
    const { authorizeUrl } = await push();
    const page = await openConsentPage(authorizeUrl, jar);
    for (const account of [undefined, dids.carol!]) {
      const refused = await submitConsent(authorizeUrl, jar, { decision: "allow", account, csrfToken: page.csrfToken });
      expect(refused.status).toBe(400);
      expect(refused.headers.get("location")).toBeNull();
    }
  });

  it("'Use another account' adds one: the accounts signed in stay signed in", async () => {
    const { authorizeUrl, verifier } = await push();
    const page = await openConsentPage(authorizeUrl, jar);
    const add = location(await submitConsent(authorizeUrl, jar, { decision: "switch_account", csrfToken: page.csrfToken }));
    expect(add.searchParams.get("add")).toBe("1");
    const form = await openConsentPage(add.href, jar);
    expect(form.html).toMatch(/name="password"/);
    expect(pageText(form.html)).toContain("The accounts already signed in on this device stay signed in.");
    expect(await subOf(await submitConsent(authorizeUrl, jar, { decision: "allow", identifier: "carol.test", password: PASSWORD, csrfToken: page.csrfToken }), verifier)).toBe(dids.carol);
    expect(await sessionsOf("alice")).toHaveLength(1);
    expect(await sessionsOf("bob")).toHaveLength(1);
    expect(await sessionsOf("carol")).toHaveLength(1);
  });

  it("prompt=select_account shows the chooser even for one account", async () => {
    const browser = await newBrowser(server);
    await signIn(browser, "alice", false);
    const { authorizeUrl } = await push({ prompt: "select_account" });
    const page = pageText((await openConsentPage(authorizeUrl, browser.jar)).html);
    expect(page).toContain("Continue as @alice.test");
    expect(page).toContain("Use another account");
  });

  it("prompt=login: no session from before the request counts, whichever account", async () => {
    const { authorizeUrl } = await push({ prompt: "login" });
    const page = await openConsentPage(authorizeUrl, jar);
    expect(page.html).toMatch(/name="password"/);
    expect(pageText(page.html)).not.toContain("Continue as");
  });

  it("prompt=none: several accounts need a choice; only a session that stays signed in, with remembered consent, answers silently", async () => {
    const several = location(await fetch((await push({ prompt: "none" })).authorizeUrl, { headers: { cookie: jar.header() }, redirect: "manual" }));
    expect(several.searchParams.get("error")).toBe("account_selection_required");

    // Bob stays signed in and allowed this app above: silent.
    const bob = await push({ prompt: "none", login_hint: "bob.test" });
    expect(await subOf(await fetch(bob.authorizeUrl, { headers: { cookie: jar.header() }, redirect: "manual" }), bob.verifier)).toBe(dids.bob);

    // Carol allowed it too, but did not choose to stay signed in: login_required.
    const carol = await push({ prompt: "none", login_hint: "carol.test" });
    expect(location(await fetch(carol.authorizeUrl, { headers: { cookie: jar.header() }, redirect: "manual" })).searchParams.get("error")).toBe("login_required");

    // A browser where only Alice stays signed in, and she never allowed this app: login_required, as for any browser,
    // so that the app cannot tell who is signed in here (docs/decisions/0023b).
    const browser = await newBrowser(server);
    await signIn(browser, "alice", true);
    const alice = await push({ prompt: "none" });
    const answer = location(await fetch(alice.authorizeUrl, { headers: { cookie: browser.jar.header() }, redirect: "manual" }));
    expect(answer.searchParams.get("error")).toBe("login_required");
    expect(answer.searchParams.get("code")).toBeNull();

    // Once she allowed it part of what it asks (atproto alone), it may learn that she must approve the rest: consent_required.
    const narrower = await push({ scope: "atproto" });
    const screen = await openConsentPage(narrower.authorizeUrl, browser.jar);
    expect(location(await submitConsent(narrower.authorizeUrl, browser.jar, { decision: "allow", account: dids.alice!, csrfToken: screen.csrfToken })).searchParams.get("code")).toBeTruthy();
    const wider = await push({ prompt: "none" });
    const asked = location(await fetch(wider.authorizeUrl, { headers: { cookie: browser.jar.header() }, redirect: "manual" }));
    expect(asked.searchParams.get("error")).toBe("consent_required");
    expect(asked.searchParams.get("code")).toBeNull();
  });
});
