import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { at, sql } from "../../app/.server/db/sql.ts";
import { sha256Base64url } from "../../app/.server/util/crypto.ts";
import { createPkce, DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { execute, rowOf } from "../helpers/databases.ts";
import { CookieJar, openConsentPage, submitConsent, visibleText } from "../helpers/consent.ts";
import { ALICE, CLIENT_ID, createAlice } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";

/**
 * Ways back (docs/decisions/0020): a link to a request that expired or was answered already sends the browser back
 * to the app's redirect_uri with access_denied, its state and iss (RFC 9207), in the request's response_mode; only
 * a link whose app cannot be identified shows a page.
 */

const REDIRECT = "http://127.0.0.1:47999/callback";
const DAY = 24 * 60 * 60 * 1000;

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

async function expire(idHash: string, ago: number): Promise<void> {
  await execute(server.database(), sql`UPDATE "AuthorizationRequest" SET "expiresAt" = ${at(Date.now() - ago)} WHERE "idHash" = ${idHash}`);
}

/** The answer's way back: a 303 to the app, read from the query or the fragment. */
function backToApp(response: Response): { params: URLSearchParams; url: URL } {
  expect(response.status).toBe(303);
  const url = new URL(response.headers.get("location")!);
  expect(`${url.origin}${url.pathname}`).toBe(REDIRECT);
  return { url, params: url.hash ? new URLSearchParams(url.hash.slice(1)) : url.searchParams };
}

describe("an expired request", () => {
  it("GET returns to the app with access_denied, state and iss (query)", async () => {
    const { authorizeUrl, idHash } = await push("expired-query");
    await expire(idHash, 60_000);
    const { params, url } = backToApp(await fetch(authorizeUrl, { redirect: "manual" }));
    expect(url.hash).toBe("");
    expect(params.get("error")).toBe("access_denied");
    expect(params.get("error_description")).toMatch(/expired/);
    expect(params.get("state")).toBe("expired-query");
    expect(params.get("iss")).toBe(server.issuer);
    expect(params.get("code")).toBeNull();
    // Only the way back is kept now: no scope, hint or PKCE challenge.
    const row = await rowOf<{ parameters: string }>(server.database(), sql`SELECT "parameters" FROM "AuthorizationRequest" WHERE "idHash" = ${idHash}`);
    expect(Object.keys(JSON.parse(row!.parameters) as object).sort()).toEqual(["client_id", "redirect_uri", "response_mode", "state"]);
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
    await expire(idHash, DAY + 60_000);
    const response = await fetch(authorizeUrl, { redirect: "manual" });
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
    const again = backToApp(await fetch(authorizeUrl, { redirect: "manual" }));
    expect(again.params.get("state")).toBe("denied-once");
  });
});

describe("an app that cannot be identified gets a page, never a redirect", () => {
  it("unknown request_uri, malformed link, another client_id", async () => {
    const { authorizeUrl, idHash } = await push("mismatch");
    await expire(idHash, 60_000);
    const other = new URL(authorizeUrl);
    other.searchParams.set("client_id", `http://localhost?${new URLSearchParams({ redirect_uri: "http://127.0.0.1/callback", scope: "atproto" })}`);
    const unknown = new URL(authorizeUrl);
    unknown.searchParams.set("request_uri", "urn:ietf:params:oauth:request_uri:req-never-issued");
    const malformed = new URL(`${server.issuer}/oauth/authorize?client_id=${encodeURIComponent(CLIENT_ID)}&request_uri=nonsense`);
    for (const url of [other, unknown, malformed]) {
      const response = await fetch(url, { redirect: "manual" });
      expect(response.status, url.href).toBe(400);
      expect(response.headers.get("location")).toBeNull();
      expect(response.headers.get("content-type")).toMatch(/text\/html/);
    }
  });
});
