import type { ParsedMail } from "mailparser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { newBrowser, openPage, pageText, postForm, type Browser } from "../helpers/account.ts";
import { openConsentPage, submitConsent } from "../helpers/consent.ts";
import { rowsOf } from "../helpers/databases.ts";
import { createPkce } from "../helpers/flow.ts";
import { startSmtpServer, type TestSmtp } from "../helpers/smtp.ts";
import { testClock, type TestClock } from "../helpers/test-clock.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, loopbackClientId, type ScopedToken } from "../helpers/xrpc.ts";
import { sha256Base64url } from "../../app/.server/util/crypto.ts";

/**
 * The emails of a new browser's sign-in and a new app (docs/decisions/0056), against a started server, a second
 * process on the same database and a real SMTP server: who is told and when, the bound under parallel sign-ins, the
 * setting, and the one-click link that ends exactly one browser session or one app's access.
 */

const PASSWORD = "another horse battery";
const FIREFOX_ANDROID = "Mozilla/5.0 (Android 14; Mobile; rv:128.0) Gecko/128.0 Firefox/128.0";
let smtp: TestSmtp;
let server: TestServer;
let second: TestServer;
let clock: TestClock;
let counter = 0;
const newAddress = () => `198.51.100.${++counter}`;

beforeAll(async () => {
  smtp = await startSmtpServer();
  clock = testClock();
  const env = {
    ...clock.env,
    ATRIUM_TRUST_PROXY: "1",
    ATRIUM_SMTP_URL: smtp.url,
    ATRIUM_EMAIL_FROM: "Atrium <no-reply@atrium.test>",
    ATRIUM_SERVICE_NAME: "Atrium Test",
    // The parallel sign-ins of one account must all be checked at once (docs/decisions/0009 makes the sixth wait).
    ATRIUM_SIGN_IN_FREE_ATTEMPTS: "20",
    ATRIUM_INVITE_REQUIRED: "false",
  };
  server = await startTestServer(env);
  second = await startTestServer({ ...env, DATABASE_URL: server.databaseUrl, PUBLIC_URL: server.issuer });
});
afterAll(async () => {
  await second?.stop();
  await server?.stop();
  await smtp?.stop();
  clock?.remove();
});

type Person = { did: string; handle: string; email: string };

async function person(name: string): Promise<Person> {
  const email = `${name}@example.com`;
  const { did, handle } = await createAccount(server, { handle: `${name}.test`, email, password: PASSWORD });
  return { did, handle, email };
}

const to = (email: string) => (mail: ParsedMail) => (mail.to && "text" in mail.to ? mail.to.text : "") === email;

/** Signs in to the account area in `browser` (a new one unless given), as a browser would with its User-Agent. */
async function signIn(who: Person, options: { browser?: Browser & { csrfToken: string }; userAgent?: string; via?: string } = {}): Promise<Browser & { csrfToken: string }> {
  const browser = options.browser ?? { ...(await newBrowser(server, newAddress())), via: options.via };
  const response = await fetch(new URL("/account", options.via ?? server.issuer), {
    method: "POST",
    headers: {
      "Content-Type": "application/x-www-form-urlencoded",
      cookie: browser.jar.header(),
      origin: server.issuer,
      "X-Forwarded-For": browser.address ?? "127.0.0.1",
      ...(options.userAgent ? { "User-Agent": options.userAgent } : {}),
    },
    body: new URLSearchParams({ csrf_token: browser.csrfToken, identifier: who.handle, password: PASSWORD, next: "/account" }),
    redirect: "manual",
  });
  browser.jar.store(response);
  await response.arrayBuffer();
  if (response.status !== 303) throw new Error(`sign-in failed (${response.status})`);
  return browser;
}

/** The links stored for the account: one per email sent (the link is stored before its email goes). */
async function linksOf(who: Person): Promise<{ kind: string; target: string }[]> {
  return rowsOf(server.database(), sql`SELECT "kind", "target" FROM "EndLink" WHERE "accountDid" = ${who.did} ORDER BY "createdAt"`);
}

function linkIn(mail: ParsedMail): string {
  const link = /https?:\/\/\S+\/account\/end\?token=end-[A-Za-z0-9_-]+/.exec(mail.text ?? "")?.[0];
  if (!link) throw new Error(`no end link in: ${mail.text}`);
  return link;
}

/** What the link of an email names: its token's hash is the row's key. */
async function targetOf(link: string): Promise<string | undefined> {
  const token = new URL(link).searchParams.get("token")!;
  const [row] = await rowsOf<{ target: string }>(server.database(), sql`SELECT "target" FROM "EndLink" WHERE "tokenHash" = ${sha256Base64url(token)}`);
  return row?.target;
}

const pathOf = (link: string) => new URL(link).pathname + new URL(link).search;

/** A loopback app of its own (its client_id names `scope`) given the account's consent in `browser`: its tokens. */
async function allowApp(browser: Browser, scope: string): Promise<ScopedToken> {
  const client = new DpopClient(server.issuer, await generateDpopKey(), loopbackClientId(scope));
  const pkce = createPkce();
  const redirectUri = "http://127.0.0.1/callback";
  const par = await client.pushAuthorizationRequest({ redirect_uri: redirectUri, scope, state: "s", code_challenge: pkce.challenge, code_challenge_method: "S256" });
  const authorizeUrl = client.authorizeUrl(par.body.request_uri);
  const page = await openConsentPage(authorizeUrl, browser.jar);
  const response = await submitConsent(authorizeUrl, browser.jar, { decision: "allow", csrfToken: page.csrfToken, headers: { "X-Forwarded-For": browser.address ?? "127.0.0.1" } });
  const code = new URL(response.headers.get("location") ?? "http://x/").searchParams.get("code");
  if (!code) throw new Error(`no code (${response.status})`);
  const exchanged = await client.exchangeCode(code, pkce.verifier, redirectUri);
  return { client, tokens: exchanged.body, accessToken: exchanged.body.access_token };
}

const end = (browser: Browser & { csrfToken: string }, link: string, fields: Record<string, string> = {}) =>
  postForm(browser, pathOf(link), { csrf_token: browser.csrfToken, token: new URL(link).searchParams.get("token")!, intent: "end", ...fields });

describe("a new browser's sign-in", () => {
  let bob: Person;
  let first: Browser & { csrfToken: string };
  let phone: Browser & { csrfToken: string };
  let mail: ParsedMail;

  beforeAll(async () => {
    bob = await person("bob");
    first = await signIn(bob);
    phone = await signIn(bob, { userAgent: FIREFOX_ANDROID });
    mail = (await smtp.received(to(bob.email), 1))[0]!;
  });

  it("the account's first browser is told of nothing; a second browser's sign-in is emailed once, naming the browser and when", async () => {
    expect(mail.subject).toBe("New sign-in to your Atrium Test account");
    const text = mail.text ?? "";
    expect(text).toContain("@bob.test");
    expect(text).toContain("Browser: Firefox on Android");
    expect(text).toMatch(/When: \w+ \d{1,2}, \d{4}.* \(UTC\)/);
    // No country database here: nothing about place.
    expect(text).not.toMatch(/country/i);
    expect(text).toContain(`${server.issuer}/account/sessions`);
    linkIn(mail);
    // Signing in again in the same browser tells of nothing.
    await signIn(bob, { browser: phone, userAgent: FIREFOX_ANDROID });
    await signIn(bob, { browser: first });
    expect(await linksOf(bob)).toHaveLength(1);
  });

  it("the link's page says what it ends and changes nothing; the button, after a recent proof, signs that browser out everywhere, and only it", async () => {
    const link = linkIn(mail);
    const shown = await openPage(first, pathOf(link));
    expect(shown.status).toBe(200);
    expect(pageText(shown.html)).toContain("Firefox on Android signed in to @bob.test");
    expect((await openPage(phone, "/account/sessions")).status).toBe(200);
    const done = await end(first, link);
    expect(done.status).toBe(200);
    expect(pageText(done.html)).toContain("Done: that browser is signed out.");
    // Signed out on both processes; the browser that pressed the button is still signed in.
    expect((await openPage(phone, "/account/sessions")).status).toBe(303);
    expect((await openPage({ ...phone, via: `http://127.0.0.1:${second.port}` }, "/account/sessions")).status).toBe(303);
    expect((await openPage(first, "/account/sessions")).status).toBe(200);
    // Replayed: refused with a page, nothing more ends.
    const replayed = await end(first, link);
    expect(replayed.status).toBe(410);
    expect(pageText(replayed.html)).toContain("This link was already used.");
    expect((await openPage(first, pathOf(link))).status).toBe(410);
  });

  it("a link that is not one, or cut short, gets a page (404), never a 500", async () => {
    const cut = linkIn(mail).slice(0, -5);
    expect((await openPage(first, pathOf(cut))).status).toBe(404);
    expect((await openPage(first, "/account/end")).status).toBe(404);
    expect(pageText((await openPage(first, "/account/end?token=end-nothing-like-a-token")).html)).toContain("This link does not work.");
  });
});

describe("an account made in a browser", () => {
  it("the browser it was made in is its first: told of nothing, then or later; the next new browser is", async () => {
    const browser = await newBrowser(server, newAddress());
    const first = await openPage(browser, "/account/sign-up");
    const second = await postForm(browser, "/account/sign-up", { csrf_token: first.csrfToken!, intent: "sign-up-handle", name: "hana", domain: ".test" });
    const made = await postForm(browser, "/account/sign-up", { csrf_token: second.csrfToken!, intent: "sign-up", name: "hana", domain: ".test", email: "hana@example.com", password: PASSWORD });
    expect(made.status).toBe(303);
    const [row] = await rowsOf<{ did: string }>(server.database(), sql`SELECT "did" FROM "Account" WHERE "handle" = 'hana.test'`);
    const hana: Person = { did: row!.did, handle: "hana.test", email: "hana@example.com" };
    await signIn(hana, { browser: { ...browser, csrfToken: (await openPage(browser, "/account")).csrfToken! } });
    expect(await linksOf(hana)).toEqual([]);
    await signIn(hana, { userAgent: FIREFOX_ANDROID });
    expect(await linksOf(hana)).toHaveLength(1);
    expect((await smtp.received((mail) => to(hana.email)(mail) && /New sign-in/.test(mail.subject ?? ""), 1))[0]!.text).toContain("Firefox on Android");
  });
});

describe("a new app", () => {
  let carol: Person;
  let browser: Browser & { csrfToken: string };
  let posts: ScopedToken;
  let likes: ScopedToken;
  let mails: ParsedMail[];

  beforeAll(async () => {
    carol = await person("carol");
    browser = await signIn(carol);
    posts = await allowApp(browser, "atproto repo:app.bsky.feed.post");
    likes = await allowApp(browser, "atproto repo:app.bsky.feed.like");
    mails = await smtp.received(to(carol.email), 2);
  });

  it("its first consent is emailed once, naming the app as the consent screen did; its next consent is not", async () => {
    // A loopback app is a program on the person's computer, known by where it receives the answer (its only mark).
    expect(mails.map((mail) => mail.subject)).toEqual(Array(2).fill("http://127.0.0.1/callback now has access to your Atrium Test account"));
    expect(mails[0]!.text).toContain("App: http://127.0.0.1/callback");
    await allowApp(browser, "atproto repo:app.bsky.feed.post");
    expect((await linksOf(carol)).map((link) => link.target)).toEqual([posts.client.clientId, likes.client.clientId]);
  });

  it("the link ends that app's access at once: its access token is refused right after, the other app's still works", async () => {
    const links = mails.map(linkIn);
    const targets = await Promise.all(links.map(targetOf));
    const postsLink = links[targets.indexOf(posts.client.clientId)]!;
    // Opening the page changes nothing (mail scanners follow links).
    expect((await openPage(browser, pathOf(postsLink))).status).toBe(200);
    expect((await call(posts, "com.atproto.server.getSession")).status).toBe(200);
    const done = await end(browser, postsLink);
    expect(pageText(done.html)).toContain("Done: that app no longer has access.");
    expect((await call(posts, "com.atproto.server.getSession")).status).toBe(401);
    expect((await call(likes, "com.atproto.server.getSession")).status).toBe(200);
    expect((await end(browser, postsLink)).status).toBe(410);
  });

  it("a link to an app given access again since it was disconnected ends nothing of the new access", async () => {
    const links = mails.map(linkIn);
    const targets = await Promise.all(links.map(targetOf));
    const likesLink = links[targets.indexOf(likes.client.clientId)]!;
    const token = new URL(likesLink).searchParams.get("token")!;
    // Disconnected in the account area, then allowed again: another access, with its own email.
    const apps = await openPage(browser, "/account/apps");
    expect(apps.status).toBe(200);
    await postForm(browser, "/account/apps", { csrf_token: browser.csrfToken, intent: "revoke", client_id: likes.client.clientId });
    const again = await allowApp(browser, "atproto repo:app.bsky.feed.like");
    await smtp.received(to(carol.email), 3);
    const done = await postForm(browser, pathOf(likesLink), { csrf_token: browser.csrfToken, token, intent: "end" });
    expect(done.status).toBe(200);
    expect((await call(again, "com.atproto.server.getSession")).status).toBe(200);
  });
});

describe("who may use a link", () => {
  it("another account's browser cannot end this account's session with its link, nor sign in as it with its own password", async () => {
    const dave = await person("dave");
    const erin = await person("erin");
    await signIn(dave);
    const daveSecond = await signIn(dave);
    const link = linkIn((await smtp.received(to(dave.email), 1))[0]!);
    const erinBrowser = await signIn(erin);
    const shown = await openPage(erinBrowser, pathOf(link));
    expect(pageText(shown.html)).toContain("To do this, sign in as @dave.test first.");
    // The button's POST without being dave: sent back to the page, nothing ends.
    expect((await end(erinBrowser, link)).status).toBe(303);
    const wrong = await postForm(erinBrowser, pathOf(link), { csrf_token: erinBrowser.csrfToken, token: new URL(link).searchParams.get("token")!, intent: "sign_in", password: "not dave's password" });
    expect(wrong.status).toBe(400);
    expect((await openPage(daveSecond, "/account/sessions")).status).toBe(200);
    // A post from another site, or without this browser's CSRF token: refused.
    expect((await postForm(erinBrowser, pathOf(link), { csrf_token: "forged", token: new URL(link).searchParams.get("token")!, intent: "end" })).status).toBe(403);
    expect((await postForm(daveSecond, pathOf(link), { csrf_token: daveSecond.csrfToken, token: new URL(link).searchParams.get("token")!, intent: "end" }, { origin: "https://evil.example" })).status).toBe(403);
    // dave, once signed in there with his password, ends it.
    const signedIn = await postForm(erinBrowser, pathOf(link), { csrf_token: erinBrowser.csrfToken, token: new URL(link).searchParams.get("token")!, intent: "sign_in", password: PASSWORD });
    expect(signedIn.status).toBe(303);
    expect(pageText((await end(erinBrowser, link)).html)).toContain("Done: that browser is signed out.");
    expect((await openPage(daveSecond, "/account/sessions")).status).toBe(303);
  });
});

describe("the setting and the bound", () => {
  it("off, nothing is sent for a new browser or a new app; on again, the next new browser is told", async () => {
    const frank = await person("frank");
    const browser = await signIn(frank);
    const sessions = await openPage(browser, "/account/sessions");
    expect(pageText(sessions.html)).toContain("Email me when a new browser or app signs in");
    expect(sessions.html).toMatch(/id="sign-in-notices"[^>]*checked/);
    const off = await postForm(browser, "/account/sessions", { csrf_token: browser.csrfToken, intent: "sign_in_notices" });
    expect(off.location).toBe("/account/sessions?notice=sign-in-notices-off");
    expect((await openPage(browser, "/account/sessions")).html).not.toMatch(/id="sign-in-notices"[^>]*checked/);
    await signIn(frank);
    await allowApp(browser, "atproto repo:app.bsky.feed.repost");
    expect(await linksOf(frank)).toEqual([]);
    await postForm(browser, "/account/sessions", { csrf_token: browser.csrfToken, intent: "sign_in_notices", on: "on" });
    await signIn(frank);
    expect((await smtp.received(to(frank.email), 1))[0]!.subject).toBe("New sign-in to your Atrium Test account");
    expect(await linksOf(frank)).toHaveLength(1);
  });

  it("eight new browsers signing in at once, on two processes, send three emails in the hour", async () => {
    const grace = await person("grace");
    await signIn(grace);
    const browsers = await Promise.all(Array.from({ length: 8 }, async (_, i) => ({ ...(await newBrowser(server, newAddress())), via: i % 2 ? `http://127.0.0.1:${second.port}` : undefined })));
    await Promise.all(browsers.map((browser) => signIn(grace, { browser, via: browser.via })));
    expect(await linksOf(grace)).toHaveLength(3);
    expect(await smtp.received(to(grace.email), 3)).toHaveLength(3);
    // The operator sees the account that hit the bound, in both processes' logs: each took four of the eight, and
    // three emails in all leave at least one refused in each.
    const bounded = new RegExp(`"did":"${grace.did}".*not sent: the account had its three this hour`);
    for (const process of [server, second]) expect(await process.printed(bounded)).toMatch(bounded);
  });
});

// Last: it moves both processes' clock a week on.
describe("a link a week old", () => {
  it("has expired: its page says so (410) and its button ends nothing", async () => {
    const ivy = await person("ivy");
    await signIn(ivy);
    const phone = await signIn(ivy);
    const link = linkIn((await smtp.received(to(ivy.email), 1))[0]!);
    clock.advance(7 * 24 * 60 * 60 * 1000);
    const browser = await signIn(ivy);
    const shown = await openPage(browser, pathOf(link));
    expect(shown.status).toBe(410);
    expect(pageText(shown.html)).toContain("This link has expired.");
    expect((await end(browser, link)).status).toBe(410);
    expect(await rowsOf(server.database(), sql`SELECT "usedAt" FROM "EndLink" WHERE "accountDid" = ${ivy.did} AND "usedAt" IS NOT NULL`)).toEqual([]);
    void phone;
  });
});
