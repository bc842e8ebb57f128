/**
 * Drives the account pages over plain HTTP, as a browser without JavaScript
 * would (GET a page, keep its cookies, POST its forms), plus the small JSON
 * endpoints their scripts call (passkeys). Every request can name its client
 * address (X-Forwarded-For, for servers started with ATRIUM_TRUST_PROXY) so
 * that one test's sign-in failures never throttle another's.
 */
import { CookieJar, visibleText } from "./consent.ts";
import type { TestServer } from "./test-server.ts";

export type Browser = {
  server: TestServer;
  jar: CookieJar;
  address?: string;
  /** Send requests to this base URL (another server process on the same database and issuer) instead of the issuer. */
  via?: string;
};

function urlOf(browser: Browser, path: string): URL {
  return new URL(path, browser.via ?? browser.server.issuer);
}

export type Page = { status: number; html: string; location: string | null; csrfToken?: string };

function baseHeaders(browser: Browser, extra: Record<string, string> = {}): Record<string, string> {
  const headers: Record<string, string> = { cookie: browser.jar.header(), ...extra };
  if (browser.address) headers["X-Forwarded-For"] = browser.address;
  return headers;
}

/** GET an account page (redirects are not followed). */
export async function openPage(browser: Browser, path: string): Promise<Page> {
  const response = await fetch(urlOf(browser, path), { headers: baseHeaders(browser), redirect: "manual" });
  browser.jar.store(response);
  const html = await response.text();
  return { status: response.status, html, location: response.headers.get("location"), csrfToken: /name="csrf_token" value="([^"]+)"/.exec(html)?.[1] };
}

/** POSTs a form to `path` as the page's own form would (our Origin unless told otherwise). */
export async function postForm(browser: Browser, path: string, fields: Record<string, string>, options: { origin?: string | null } = {}): Promise<Page> {
  const headers = baseHeaders(browser, { "Content-Type": "application/x-www-form-urlencoded" });
  if (options.origin !== null) headers.origin = options.origin ?? browser.server.issuer;
  const response = await fetch(urlOf(browser, path), { method: "POST", headers, body: new URLSearchParams(fields), redirect: "manual" });
  browser.jar.store(response);
  const html = await response.text();
  return { status: response.status, html, location: response.headers.get("location"), csrfToken: /name="csrf_token" value="([^"]+)"/.exec(html)?.[1] };
}

export type JsonAnswer = { status: number; body: Record<string, unknown> & { error?: string; error_description?: string; ok?: boolean; next?: string; challenge?: string }; headers: Headers };

export async function getJson(browser: Browser, path: string): Promise<JsonAnswer> {
  const response = await fetch(urlOf(browser, path), { headers: baseHeaders(browser, { Accept: "application/json" }), redirect: "manual" });
  browser.jar.store(response);
  return { status: response.status, body: (await response.json()) as JsonAnswer["body"], headers: response.headers };
}

export async function postJson(browser: Browser, path: string, body: unknown, options: { origin?: string | null } = {}): Promise<JsonAnswer> {
  const headers = baseHeaders(browser, { "Content-Type": "application/json", Accept: "application/json" });
  if (options.origin !== null) headers.origin = options.origin ?? browser.server.issuer;
  const response = await fetch(urlOf(browser, path), { method: "POST", headers, body: JSON.stringify(body), redirect: "manual" });
  browser.jar.store(response);
  const text = await response.text();
  let parsed: JsonAnswer["body"] = {};
  try {
    parsed = JSON.parse(text) as JsonAnswer["body"];
  } catch {
    parsed = { error: "not_json", error_description: text.slice(0, 300) };
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

/** A new browser with this page's CSRF cookie (GET /account first). */
export async function newBrowser(server: TestServer, address?: string): Promise<Browser & { csrfToken: string }> {
  const browser: Browser = { server, jar: new CookieJar(), address };
  const page = await openPage(browser, "/account");
  if (!page.csrfToken) throw new Error(`no CSRF token on /account (${page.status})`);
  return { ...browser, csrfToken: page.csrfToken };
}

/** Signs a new browser in to the account area with a password; returns it with its CSRF token. */
export async function signedIn(server: TestServer, identifier: string, password: string, address?: string): Promise<Browser & { csrfToken: string }> {
  const browser = await newBrowser(server, address);
  const answer = await postForm(browser, "/account", { csrf_token: browser.csrfToken, identifier, password, next: "/account" });
  if (answer.status !== 303 || !browser.jar.get("atrium_session")) throw new Error(`sign-in failed (${answer.status}): ${answer.html.slice(0, 300)}`);
  return browser;
}

/** The passkey options a page embeds in its Remix loader data. */
export function embeddedChallenge(html: string): string | undefined {
  return /\\"challenge\\",\\"([A-Za-z0-9_-]+)\\"/.exec(html)?.[1];
}

/** The text a person reads on a server-rendered page: visible text with HTML's character references decoded. */
export function pageText(html: string): string {
  return visibleText(html)
    .replace(/&#x27;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}
