import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { sha256Base64url } from "../../app/.server/util/crypto.ts";
import { createPkce, DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { execute, rowOf } from "../helpers/databases.ts";
import { CookieJar, openConsentPage, submitConsent, visibleText } from "../helpers/consent.ts";
import { ALICE, CLIENT_ID, createAlice } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

/**
 * Ways back (docs/decisions/0020, 0022): a link to a request that expired or was answered already sends the browser
 * its screen was shown to back to the app's redirect_uri with access_denied, its state and iss (RFC 9207), in the
 * request's response_mode. Any other browser gets a page naming the app's host with a button there (RFC 9700
 * §4.11.2: one link must not become a redirector for whoever opens it); a link whose app cannot be identified, or
 * whose screen was never shown, a page with one sentence.
 */

const REDIRECT = "http://127.0.0.1:47999/callback";

let server: TestServer;
let client: DpopClient;

beforeAll(async () => {
  server = await startTestServer();
  await createAlice(server);
  client = new DpopClient(server.issuer, await generateDpopKey(), CLIENT_ID);
});
afterAll(() => server?.stop());

async function push(state: string, extra: Record<string, string> = {}): Promise<{ authorizeUrl: string; idHash: string }> {
  const pkce = createPkce();
  const par = await client.pushAuthorizationRequest({ redirect_uri: REDIRECT, scope: "atproto transition:generic", state, code_challenge: pkce.challenge, code_challenge_method: "S256", ...extra });
  expect(par.status, JSON.stringify(par.body)).toBe(201);
  return { authorizeUrl: client.authorizeUrl(par.body.request_uri), idHash: sha256Base64url(par.body.request_uri) };
}

/** Moves the request's expiry `ago` into the past (and the time the cleanup looks at it with it, as the server set it). */
async function expire(idHash: string, ago: number): Promise<void> {
  const time = at(Date.now() - ago);
  await execute(server.database(), sql`UPDATE "AuthorizationRequest" SET "expiresAt" = ${time}, "purgeAt" = ${time} WHERE "idHash" = ${idHash}`);
}

/** Opens the link in the browser of `jar` (a GET, with its cookies). */
async function open(authorizeUrl: string, jar = new CookieJar()): Promise<Response> {
  return fetch(authorizeUrl, { headers: { cookie: jar.header() }, redirect: "manual" });
}

/** The page another browser gets: no redirect, the app's host named, and a button to the way back. */
async function otherBrowserPage(response: Response): Promise<{ text: string; button: URL }> {
  expect(response.status).toBe(400);
  expect(response.headers.get("location")).toBeNull();
  const html = await response.text();
  const href = /<a [^>]*href="(http:\/\/127\.0\.0\.1:47999\/callback[^"]*)"/.exec(html)?.[1];
  expect(href).toBeDefined();
  return { text: visibleText(html), button: new URL(href!.replaceAll("&amp;", "&")) };
}

/** The answer's way back: a 303 to the app, read from the query or the fragment. */
function backToApp(response: Response): { params: URLSearchParams; url: URL } {
  expect(response.status).toBe(303);
  const url = new URL(response.headers.get("location")!);
  expect(`${url.origin}${url.pathname}`).toBe(REDIRECT);
  return { url, params: url.hash ? new URLSearchParams(url.hash.slice(1)) : url.searchParams };
}

describe("an expired request", () => {
  it("GET in the browser it was shown to returns to the app with access_denied, state and iss (query)", async () => {
    const { authorizeUrl, idHash } = await push("expired-query");
    const jar = new CookieJar();
    expect((await openConsentPage(authorizeUrl, jar)).status).toBe(200);
    await expire(idHash, 60_000);
    const { params, url } = backToApp(await open(authorizeUrl, jar));
    expect(url.hash).toBe("");
    expect(params.get("error")).toBe("access_denied");
    expect(params.get("error_description")).toMatch(/expired/);
    expect(params.get("state")).toBe("expired-query");
    expect(params.get("iss")).toBe(server.issuer);
    expect(params.get("code")).toBeNull();
    // Only the way back is kept now: no scope, hint or PKCE challenge.
    const row = await rowOf<{ parameters: string | null; wayBack: string }>(server.database(), sql`SELECT "parameters", "wayBack" FROM "AuthorizationRequest" WHERE "idHash" = ${idHash}`);
    expect(row?.parameters).toBeNull();
    expect(Object.keys(JSON.parse(row!.wayBack) as object).sort()).toEqual(["redirect_uri", "response_mode", "state"]);
  });

  it("never shown to anyone: the link is unknown (a page with one sentence), and the row is gone", async () => {
    const { authorizeUrl, idHash } = await push("never-shown");
    await expire(idHash, 60_000);
    const response = await open(authorizeUrl);
    expect(response.status).toBe(400);
    expect(response.headers.get("location")).toBeNull();
    expect(visibleText(await response.text())).toContain("Go back to the app and start signing in again.");
    expect(await rowOf(server.database(), sql`SELECT "idHash" FROM "AuthorizationRequest" WHERE "idHash" = ${idHash}`)).toBeUndefined();
  });

  it("in the fragment when the app asked for response_mode=fragment; a form posted after expiry goes back too", async () => {
    const { authorizeUrl, idHash } = await push("expired-fragment", { response_mode: "fragment" });
    const jar = new CookieJar();
    const page = await openConsentPage(authorizeUrl, jar);
    expect(page.status).toBe(200);
    await expire(idHash, 1000);
    const { params, url } = backToApp(await submitConsent(authorizeUrl, jar, { decision: "allow", identifier: ALICE.handle, password: ALICE.password, csrfToken: page.csrfToken }));
    expect(url.search).toBe("");
    expect(params.get("error")).toBe("access_denied");
    expect(params.get("state")).toBe("expired-fragment");
    expect(params.get("iss")).toBe(server.issuer);
    expect(params.get("code")).toBeNull();
  });

  it("past the grace period the link is unknown: a page with one sentence, and the row is gone", async () => {
    const { authorizeUrl, idHash } = await push("long-gone");
    const jar = new CookieJar();
    await openConsentPage(authorizeUrl, jar);
    await expire(idHash, 60_000);
    backToApp(await open(authorizeUrl, jar));
    await execute(server.database(), sql`UPDATE "AuthorizationRequest" SET "purgeAt" = ${at(Date.now() - 1000)} WHERE "idHash" = ${idHash}`);
    const response = await open(authorizeUrl, jar);
    expect(response.status).toBe(400);
    expect(response.headers.get("location")).toBeNull();
    expect(visibleText(await response.text())).toContain("Go back to the app and start signing in again.");
    expect(await rowOf(server.database(), sql`SELECT "idHash" FROM "AuthorizationRequest" WHERE "idHash" = ${idHash}`)).toBeUndefined();
  });
});

describe("an answered request", () => {
  it("opened again returns to the app without a code, and cannot be answered again", async () => {
    const { authorizeUrl } = await push("used-once");
    const jar = new CookieJar();
    const page = await openConsentPage(authorizeUrl, jar);
    const allowed = backToApp(await submitConsent(authorizeUrl, jar, { decision: "allow", identifier: ALICE.handle, password: ALICE.password, csrfToken: page.csrfToken }));
    expect(allowed.params.get("code")).toBeTruthy();

    const again = backToApp(await fetch(authorizeUrl, { headers: { cookie: jar.header() }, redirect: "manual" }));
    expect(again.params.get("error")).toBe("access_denied");
    expect(again.params.get("error_description")).toMatch(/already answered/);
    expect(again.params.get("state")).toBe("used-once");
    expect(again.params.get("code")).toBeNull();

    // Allow posted a second time (the back button, a second tab): back to the app, no second code.
    const codes = await rowOf<{ n: number }>(server.database(), sql`SELECT COUNT(*) AS "n" FROM "AuthorizationCode"`);
    const second = backToApp(await submitConsent(authorizeUrl, jar, { decision: "allow", csrfToken: page.csrfToken }));
    expect(second.params.get("code")).toBeNull();
    expect(second.params.get("error")).toBe("access_denied");
    expect(await rowOf<{ n: number }>(server.database(), sql`SELECT COUNT(*) AS "n" FROM "AuthorizationCode"`)).toEqual(codes);
  });

  it("a denied request opened again returns with access_denied", async () => {
    const { authorizeUrl } = await push("denied-once");
    const jar = new CookieJar();
    const page = await openConsentPage(authorizeUrl, jar);
    backToApp(await submitConsent(authorizeUrl, jar, { decision: "deny", csrfToken: page.csrfToken }));
    const again = backToApp(await open(authorizeUrl, jar));
    expect(again.params.get("state")).toBe("denied-once");
  });
});

describe("only the browser a request was shown to goes back unasked (RFC 9700 §4.11.2)", () => {
  const OPENS = 12;

  it(`answered in browser A, then opened ${OPENS} times at once by A, by B (a browser that never saw it) and by browsers without cookies: only A is redirected`, async () => {
    const { authorizeUrl } = await push("answered-in-a");
    const a = new CookieJar();
    const b = new CookieJar();
    // B has a browser cookie of this server (it opened another request), just never this request.
    await openConsentPage((await push("b-has-its-own")).authorizeUrl, b);
    expect(b.header()).not.toBe("");
    const page = await openConsentPage(authorizeUrl, a);
    backToApp(await submitConsent(authorizeUrl, a, { decision: "deny", csrfToken: page.csrfToken }));

    const opens = await Promise.all(Array.from({ length: 3 * OPENS }, (_, i) => open(authorizeUrl, [a, b, new CookieJar()][i % 3])));
    const byBrowser = (n: number) => opens.filter((_, i) => i % 3 === n);
    for (const response of byBrowser(0)) expect(backToApp(response).params.get("state")).toBe("answered-in-a");
    for (const response of [...byBrowser(1), ...byBrowser(2)]) {
      const { text, button } = await otherBrowserPage(response);
      expect(text).toContain("This sign-in request is no longer open");
      expect(text).toContain("Go back to 127.0.0.1:47999 only if you were signing in to that app.");
      // The button is the way back A got: access_denied and state, never a code.
      expect(`${button.origin}${button.pathname}`).toBe(REDIRECT);
      expect(button.searchParams.get("error")).toBe("access_denied");
      expect(button.searchParams.get("state")).toBe("answered-in-a");
      expect(button.searchParams.get("code")).toBeNull();
    }
  });

  it("expired after browser A was shown it: A goes back, B gets the page, in parallel; the page speaks B's language", async () => {
    const { authorizeUrl, idHash } = await push("expired-in-a", { response_mode: "fragment" });
    const a = new CookieJar();
    expect((await openConsentPage(authorizeUrl, a)).status).toBe(200);
    await expire(idHash, 60_000);
    const b = new CookieJar();
    const [forA, forB, forFrenchB] = await Promise.all([
      open(authorizeUrl, a),
      open(authorizeUrl, b),
      fetch(authorizeUrl, { headers: { "Accept-Language": "fr" }, redirect: "manual" }),
    ]);
    expect(backToApp(forA).params.get("state")).toBe("expired-in-a");
    const { button } = await otherBrowserPage(forB);
    expect(new URLSearchParams(button.hash.slice(1)).get("state")).toBe("expired-in-a");
    expect((await otherBrowserPage(forFrenchB)).text).toContain("Retournez sur 127.0.0.1:47999 seulement si vous vous connectiez à cette application.");
  });

  it("the browser that answered is the one redirected, even when another opened the screen first", async () => {
    const { authorizeUrl } = await push("opened-by-b-first");
    const a = new CookieJar();
    const b = new CookieJar();
    await openConsentPage(authorizeUrl, b);
    const page = await openConsentPage(authorizeUrl, a);
    backToApp(await submitConsent(authorizeUrl, a, { decision: "deny", csrfToken: page.csrfToken }));
    backToApp(await open(authorizeUrl, a));
    await otherBrowserPage(await open(authorizeUrl, b));
  });
});

describe("an app that cannot be identified gets a page, never a redirect", () => {
  it("unknown request_uri, malformed link, each with any client_id", async () => {
    const { authorizeUrl } = await push("unknown");
    const unknown = new URL(authorizeUrl);
    unknown.searchParams.set("request_uri", "urn:ietf:params:oauth:request_uri:req-never-issued");
    const unknownOther = new URL(unknown);
    unknownOther.searchParams.set("client_id", OTHER_CLIENT);
    const malformed = new URL(`${server.issuer}/oauth/authorize?client_id=${encodeURIComponent(CLIENT_ID)}&request_uri=nonsense`);
    for (const url of [unknown, unknownOther, malformed]) {
      const response = await fetch(url, { redirect: "manual" });
      expect(response.status, url.href).toBe(400);
      expect(response.headers.get("location")).toBeNull();
      expect(response.headers.get("content-type")).toMatch(/text\/html/);
      expect(await response.text()).not.toContain("127.0.0.1:47999");
    }
  });
});

/** Another app's client_id, as a changed or mixed-up link carries it. */
const OTHER_CLIENT = `http://localhost?${new URLSearchParams({ redirect_uri: "http://127.0.0.1/callback", scope: "atproto" })}`;

/** The link of `authorizeUrl` with another app's client_id. */
function withOtherClient(authorizeUrl: string): string {
  const url = new URL(authorizeUrl);
  url.searchParams.set("client_id", OTHER_CLIENT);
  return url.href;
}

/** The words a person reads on a page: its visible text without the developers' folded details. */
function plainWords(html: string): string {
  return visibleText(html.replace(/<details[\s\S]*?<\/details>/g, " "));
}

describe("a request opened with another client_id goes back to the app that pushed it (docs/decisions/0032)", () => {
  const OPENS = 12;

  it("the browser it was shown to goes back with access_denied, state and iss; the request is ended", async () => {
    const { authorizeUrl, idHash } = await push("other-client-shown", { response_mode: "fragment" });
    const a = new CookieJar();
    expect((await openConsentPage(authorizeUrl, a)).status).toBe(200);
    const { params, url } = backToApp(await open(withOtherClient(authorizeUrl), a));
    expect(url.search).toBe("");
    expect(Object.fromEntries(params)).toEqual({
      error: "access_denied",
      error_description: "This authorization request was opened with another client_id",
      state: "other-client-shown",
      iss: server.issuer,
    });
    // Ended: no code for it any more, with the right client_id either; only its way back is kept.
    expect(backToApp(await open(authorizeUrl, a)).params.get("error")).toBe("access_denied");
    const row = await rowOf<{ parameters: string | null; consumedAt: unknown }>(server.database(), sql`SELECT "parameters", "consumedAt" FROM "AuthorizationRequest" WHERE "idHash" = ${idHash}`);
    expect(row?.parameters).toBeNull();
    expect(row?.consumedAt).not.toBeNull();
  });

  it("another browser gets a page in plain words naming the app's host, with a button to the way back, never a redirect", async () => {
    const { authorizeUrl } = await push("other-client-elsewhere");
    await openConsentPage(authorizeUrl, new CookieJar());
    const response = await open(withOtherClient(authorizeUrl), new CookieJar());
    const { button } = await otherBrowserPage(response.clone());
    const html = await response.text();
    const words = plainWords(html);
    expect(words).toContain("This sign-in link is not valid");
    expect(words).toContain("Go back to 127.0.0.1:47999 only if you were signing in to that app");
    expect(words).not.toMatch(/request_uri|client_id|DPoP|\bPAR\b/);
    // The protocol words are there for developers, folded.
    expect(visibleText(html)).toContain("The client_id in the link is not the app that pushed this request.");
    expect(button.searchParams.get("error")).toBe("access_denied");
    expect(button.searchParams.get("state")).toBe("other-client-elsewhere");
    expect(button.searchParams.get("iss")).toBe(server.issuer);
    expect(button.searchParams.get("code")).toBeNull();
  });

  it("a request never shown to anyone: ended, and whoever opens it gets the page, in their language", async () => {
    const { authorizeUrl, idHash } = await push("other-client-unshown");
    const response = await fetch(withOtherClient(authorizeUrl), { headers: { "Accept-Language": "fr" }, redirect: "manual" });
    const { text } = await otherBrowserPage(response);
    expect(text).toContain("Retournez sur 127.0.0.1:47999 seulement si vous vous connectiez à cette application");
    // A request never shown keeps nothing once it can no longer be answered.
    expect(await rowOf(server.database(), sql`SELECT "idHash" FROM "AuthorizationRequest" WHERE "idHash" = ${idHash}`)).toBeUndefined();
  });

  it(`${OPENS} opens at once by the browser it was shown to, by another and by browsers without cookies: one ending, only the first browser redirected, no code`, async () => {
    const { authorizeUrl, idHash } = await push("other-client-race");
    const a = new CookieJar();
    const b = new CookieJar();
    await openConsentPage((await push("b-has-its-own-too")).authorizeUrl, b);
    expect((await openConsentPage(authorizeUrl, a)).status).toBe(200);
    const codes = await rowOf<{ n: number }>(server.database(), sql`SELECT COUNT(*) AS "n" FROM "AuthorizationCode"`);
    const link = withOtherClient(authorizeUrl);
    // On PostgreSQL (project postgresql) the opens race on several pooled connections; on SQLite the store's steps
    // run one after another in the one server process (a synchronous driver), so there it checks the outcome only.
    const opens = await Promise.all(Array.from({ length: 3 * OPENS }, (_, i) => open(link, [a, b, new CookieJar()][i % 3])));
    for (const [i, response] of opens.entries()) {
      if (i % 3 === 0) {
        expect(backToApp(response).params.get("state")).toBe("other-client-race");
      } else {
        const { text, button } = await otherBrowserPage(response);
        expect(text).not.toMatch(/request_uri|DPoP|\bPAR\b/);
        expect(button.searchParams.get("state")).toBe("other-client-race");
      }
    }
    const row = await rowOf<{ parameters: string | null }>(server.database(), sql`SELECT "parameters" FROM "AuthorizationRequest" WHERE "idHash" = ${idHash}`);
    expect(row?.parameters).toBeNull();
    expect(await rowOf<{ n: number }>(server.database(), sql`SELECT COUNT(*) AS "n" FROM "AuthorizationCode"`)).toEqual(codes);
  });
});
