import { createPkce, DpopClient, generateDpopKey } from "../../scripts/lib/dpop-client.ts";
import { loopbackClientId } from "./xrpc-extra.ts";

/**
 * Drives the consent screen over plain HTTP, as a browser without
 * JavaScript would: GET the page, keep its cookies, POST the form.
 */

export class CookieJar {
  private cookies = new Map<string, string>();

  store(response: Response): void {
    for (const header of response.headers.getSetCookie()) {
      const [pair] = header.split(";");
      const index = pair!.indexOf("=");
      const name = pair!.slice(0, index).trim();
      const value = pair!.slice(index + 1).trim();
      if (/Max-Age=0/i.test(header)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }
}

export type ConsentPage = { status: number; html: string; csrfToken?: string };

export async function openConsentPage(authorizeUrl: string, jar: CookieJar): Promise<ConsentPage> {
  const response = await fetch(authorizeUrl, { headers: { cookie: jar.header() }, redirect: "manual" });
  jar.store(response);
  const html = await response.text();
  const csrfToken = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];
  return { status: response.status, html, csrfToken };
}

export type ConsentPost = {
  decision: "allow" | "deny" | "switch_account" | "choose" | "reactivate";
  identifier?: string;
  password?: string;
  /** "Stay signed in on this device" (docs/decisions/0020). */
  staySignedIn?: boolean;
  /** The account the screen was shown for (its hidden field), or one the chooser names (`chooseAccount`). */
  account?: string;
  chooseAccount?: string;
  csrfToken?: string;
  origin?: string | null;
  /** Extra request headers (e.g. X-Forwarded-For, as a client behind a trusted proxy sends it). */
  headers?: Record<string, string>;
};

/** Posts the consent form of `authorizeUrl`; returns the response without following redirects. */
export async function submitConsent(authorizeUrl: string, jar: CookieJar, post: ConsentPost): Promise<Response> {
  const url = new URL(authorizeUrl);
  const form = new URLSearchParams({
    csrf_token: post.csrfToken ?? "",
    request_uri: url.searchParams.get("request_uri") ?? "",
    client_id: url.searchParams.get("client_id") ?? "",
    decision: post.decision,
  });
  if (post.identifier !== undefined) form.set("identifier", post.identifier);
  if (post.password !== undefined) form.set("password", post.password);
  if (post.staySignedIn) form.set("stay_signed_in", "on");
  if (post.account !== undefined) form.set("account", post.account);
  if (post.chooseAccount !== undefined) form.set("choose_account", post.chooseAccount);
  const headers: Record<string, string> = { "Content-Type": "application/x-www-form-urlencoded", cookie: jar.header(), ...post.headers };
  if (post.origin !== null) headers.origin = post.origin ?? url.origin;
  const response = await fetch(url, { method: "POST", headers, body: form, redirect: "manual" });
  jar.store(response);
  return response;
}

/**
 * Opens the screen and allows with a password; returns the redirect Location. With `staySignedIn`, the person ticks
 * "Stay signed in on this device" (prompt=none answers only such a session: docs/decisions/0020).
 */
export async function approveWithPassword(authorizeUrl: string, jar: CookieJar, identifier: string, password: string, staySignedIn = false): Promise<URL> {
  const page = await openConsentPage(authorizeUrl, jar);
  if (page.status !== 200 || !page.csrfToken) throw new Error(`consent page not shown (${page.status}): ${page.html.slice(0, 500)}`);
  const response = await submitConsent(authorizeUrl, jar, { decision: "allow", identifier, password, staySignedIn, csrfToken: page.csrfToken });
  const location = response.headers.get("location");
  if (response.status !== 303 || !location) throw new Error(`expected a 303 redirect, got ${response.status}: ${(await response.text()).slice(0, 500)}`);
  return new URL(location);
}

/** The text a person sees in a server-rendered page (scripts and tags removed, whitespace collapsed). */
export function visibleText(html: string): string {
  return html
    .replace(/<script[\s\S]*?<\/script>/g, " ")
    // React separates adjacent text nodes with empty comments; <wbr> (a line-break opportunity in long names) is no space.
    .replace(/<!-- -->|<wbr\/?>/g, "")
    .replace(/<[^>]+>/g, " ")
    .replace(/\s+/g, " ");
}

/**
 * A new sign-in request of the atproto loopback app for `scope` (PAR, then the authorization URL its consent screen is
 * at), with any further parameters (`prompt`, `login_hint`…).
 */
export async function pushedLoopbackRequest(issuer: string, scope: string, extra: Record<string, string> = {}): Promise<string> {
  const client = new DpopClient(issuer, await generateDpopKey(), loopbackClientId(scope));
  const pkce = createPkce();
  const par = await client.pushAuthorizationRequest({ redirect_uri: "http://127.0.0.1/callback", scope, state: "s1", code_challenge: pkce.challenge, code_challenge_method: "S256", ...extra });
  if (par.status !== 201) throw new Error(`PAR answered ${par.status}: ${JSON.stringify(par.body)}`);
  return client.authorizeUrl(par.body.request_uri);
}
