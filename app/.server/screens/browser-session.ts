import type { AccountSummary } from "../accounts/account-manager.ts";
import { cookieNames, csrfFor, deviceCookie, isSameOriginPost, isValidCsrf, knownDeviceId, readCookie, requestClientAddress, serializeCookie } from "../http/browser.ts";
import type { Services } from "../services.ts";

/**
 * The account area's browser session: who is signed in, the CSRF token of
 * this browser, and signing in and out. Sign-in goes through the same
 * throttled SignIn as the consent screen.
 */

export type SignedIn = {
  account: AccountSummary;
  sessionIdHash: string;
  /** When this browser session began (a sign-in). */
  signedInAt: Date;
  /** This browser proved the password or a passkey within the last few minutes (docs/decisions/0007). */
  recentlyAuthenticated: boolean;
};

export async function currentSession(services: Services, request: Request): Promise<SignedIn | undefined> {
  const session = await services.sessions.resolve(readCookie(request, cookieNames(services.config).session));
  return session
    ? { account: session.account, sessionIdHash: session.idHash, signedInAt: session.createdAt, recentlyAuthenticated: session.recentlyAuthenticated }
    : undefined;
}

/** This browser's CSRF token; `headers` carries the cookie when it had none yet. */
export function csrfToken(services: Services, request: Request, headers: Headers): string {
  const csrf = csrfFor(request, services.config, services.cookieSecret);
  if (csrf.setCookie) headers.append("Set-Cookie", csrf.setCookie);
  return csrf.token;
}

/** A state-changing post comes from our origin and carries this browser's CSRF token (docs/architecture.md, "Browser security"). */
export function isTrustedPost(services: Services, request: Request, token: string): boolean {
  return isSameOriginPost(request, services.config) && isValidCsrf(request, services.config, services.cookieSecret, token);
}

/**
 * Creates a browser session for the account after it signed in; returns the
 * cookies to set: the session's, and the one that records this browser as a
 * known device of the account (docs/decisions/0009).
 */
export async function startSession(services: Services, request: Request, accountDid: string): Promise<string[]> {
  const { config } = services;
  const sessionId = await services.sessions.create(accountDid, {
    userAgent: request.headers.get("user-agent") ?? undefined,
    ipAddress: requestClientAddress(request),
  });
  return [
    serializeCookie(config, cookieNames(config).session, sessionId, Math.floor(config.lifetimes.browserSession / 1000)),
    deviceCookie(request, config, services.cookieSecret, accountDid),
  ];
}

/** Appends each Set-Cookie of `cookies` to `headers` (returned, for chaining). */
export function withCookies(headers: Headers, cookies: readonly string[]): Headers {
  for (const cookie of cookies) headers.append("Set-Cookie", cookie);
  return headers;
}

/** Ends this browser's session; returns the cookie that clears it. */
export async function endSession(services: Services, request: Request): Promise<string> {
  const { config } = services;
  await services.sessions.destroy(readCookie(request, cookieNames(config).session));
  return serializeCookie(config, cookieNames(config).session, "", 0);
}

/**
 * Signs in with a password and starts this browser's session: the account
 * and the session cookie. A wrong password (the same message whatever was
 * wrong; nothing typed is echoed) or a wait is thrown, as the error model's
 * refusal for the form to show (screens/outcome.ts, `formErrorOf`).
 */
export async function signInWithPassword(services: Services, request: Request, identifier: string, password: string): Promise<{ account: AccountSummary; setCookies: string[] }> {
  const { config, cookieSecret } = services;
  const knownDevice = (accountDid: string) => knownDeviceId(request, config, cookieSecret, accountDid);
  const account = await services.signIn.withPassword(identifier, password, requestClientAddress(request), knownDevice);
  return { account, setCookies: await startSession(services, request, account.did) };
}

/** Where to go after signing in: only a path of the account area (never another site). */
export function accountReturnPath(value: string | null | undefined): string {
  if (value && /^\/account(\/[a-z-]*)?$/.test(value)) return value;
  return "/account";
}

/** The sign-in page for a signed-out visitor of `path`. */
export function signInLocation(path: string): string {
  return path === "/account" ? "/account" : `/account?${new URLSearchParams({ next: path })}`;
}
