/**
 * Many grants for one account with a single password sign-in: the first
 * approval signs in (and keeps the browser session in the jar); every later
 * one approves with that session, as a person who is already signed in
 * would. Load and concurrency tests need dozens of grants, and dozens of
 * password checks would trip sign-in rate limits and waste scrypt time.
 */
import { DpopClient, generateDpopKey, type TokenSet } from "../../scripts/lib/dpop-client.ts";
import { CookieJar, openConsentPage, submitConsent } from "./consent.ts";
import { ALICE, CLIENT_ID, createPkce, SCOPE } from "./flow.ts";

export type GrantSession = { client: DpopClient; tokens: TokenSet };

export type AccountBrowser = { jar: CookieJar; signedIn: boolean };

export function newBrowser(): AccountBrowser {
  return { jar: new CookieJar(), signedIn: false };
}

/** Pushes a request for `client` and answers the consent screen with `browser`; returns the code and PKCE verifier. */
export async function approveInBrowser(
  issuer: string,
  client: DpopClient,
  browser: AccountBrowser,
  redirectUri = "http://127.0.0.1:54321/callback",
): Promise<{ code: string; verifier: string; redirectUri: string }> {
  const pkce = createPkce();
  const par = await client.pushAuthorizationRequest({
    redirect_uri: redirectUri,
    scope: SCOPE,
    state: `s-${Math.random().toString(36).slice(2)}`,
    code_challenge: pkce.challenge,
    code_challenge_method: "S256",
  });
  if (par.status !== 201) throw new Error(`PAR failed (${par.status}): ${JSON.stringify(par.body)}`);
  const authorizeUrl = client.authorizeUrl(par.body.request_uri);
  const page = await openConsentPage(authorizeUrl, browser.jar);
  if (page.status !== 200 || !page.csrfToken) throw new Error(`consent page not shown (${page.status})`);
  const credentials = browser.signedIn ? {} : { identifier: ALICE.handle, password: ALICE.password };
  const response = await submitConsent(authorizeUrl, browser.jar, { decision: "allow", csrfToken: page.csrfToken, ...credentials });
  const location = response.headers.get("location");
  if (response.status !== 303 || !location) throw new Error(`expected 303, got ${response.status}: ${(await response.text()).slice(0, 300)}`);
  browser.signedIn = true;
  const code = new URL(location).searchParams.get("code");
  if (!code) throw new Error(`no code in ${location}`);
  return { code, verifier: pkce.verifier, redirectUri };
}

/** A fresh loopback client (own DPoP key) with its own grant, tokens in hand. */
export async function grantFor(issuer: string, browser: AccountBrowser, clientId = CLIENT_ID): Promise<GrantSession> {
  const client = new DpopClient(issuer, await generateDpopKey(), clientId);
  const { code, verifier, redirectUri } = await approveInBrowser(issuer, client, browser);
  const exchanged = await client.exchangeCode(code, verifier, redirectUri);
  if (exchanged.status !== 200) throw new Error(`code exchange failed (${exchanged.status}): ${JSON.stringify(exchanged.body)}`);
  return { client, tokens: exchanged.body };
}

/** `count` grants (sequentially: the first signs in, the rest reuse the session). */
export async function manyGrants(issuer: string, count: number): Promise<GrantSession[]> {
  const browser = newBrowser();
  const sessions: GrantSession[] = [];
  for (let index = 0; index < count; index++) sessions.push(await grantFor(issuer, browser));
  return sessions;
}

/** Nearest-rank percentile of a list of numbers (milliseconds). */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}
