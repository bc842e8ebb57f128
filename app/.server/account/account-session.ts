import type { AccountSummary } from "../accounts/account-manager.ts";
import { SignInError } from "../accounts/sign-in.ts";
import { clientAddress, cookieNames, csrfFor, isSameOriginPost, isValidCsrf, readCookie, serializeCookie } from "../http/browser.ts";
import { TooManyRequestsError } from "../oauth/errors/oauth-error.ts";
import type { Services } from "../services.ts";

/**
 * The account area's browser session: who is signed in, the CSRF token of
 * this browser, and signing in and out. Sign-in goes through the same
 * throttled SignIn as the consent screen.
 */

export type SignedIn = {
  account: AccountSummary;
  sessionIdHash: string;
  /** This browser proved the password or a passkey within the last few minutes (docs/decisions/0007). */
  recentlyAuthenticated: boolean;
};

export async function currentSession(services: Services, request: Request): Promise<SignedIn | undefined> {
  const session = await services.sessions.resolve(readCookie(request, cookieNames(services.config).session));
  return session ? { account: session.account, sessionIdHash: session.idHash, recentlyAuthenticated: session.recentlyAuthenticated } : undefined;
}

/** This browser's CSRF token; `headers` carries the cookie when it had none yet. */
export function csrfToken(services: Services, request: Request, headers: Headers): string {
  const csrf = csrfFor(request, services.config, services.cookieSecret);
  if (csrf.setCookie) headers.append("Set-Cookie", csrf.setCookie);
  return csrf.token;
}

/** DESIGN 4.5: a state-changing post comes from our origin and carries this browser's CSRF token. */
export function isTrustedPost(services: Services, request: Request, token: string): boolean {
  return isSameOriginPost(request, services.config) && isValidCsrf(request, services.config, services.cookieSecret, token);
}

/** Creates a browser session for the account and returns its cookie. */
export async function startSession(services: Services, request: Request, accountDid: string): Promise<string> {
  const { config } = services;
  const sessionId = await services.sessions.create(accountDid, {
    userAgent: request.headers.get("user-agent") ?? undefined,
    ipAddress: clientAddress(request),
  });
  return serializeCookie(config, cookieNames(config).session, sessionId, Math.floor(config.lifetimes.browserSession / 1000));
}

/** Ends this browser's session; returns the cookie that clears it. */
export async function endSession(services: Services, request: Request): Promise<string> {
  const { config } = services;
  await services.sessions.destroy(readCookie(request, cookieNames(config).session));
  return serializeCookie(config, cookieNames(config).session, "", 0);
}

export type PasswordSignIn =
  | { ok: true; account: AccountSummary; setCookie: string }
  | { ok: false; message: string; status: number; retryAfterSeconds?: number };

/** Signs in with a password; a wrong one gets the same message whatever was wrong, and nothing typed is echoed. */
export async function signInWithPassword(services: Services, request: Request, identifier: string, password: string): Promise<PasswordSignIn> {
  if (!identifier.trim() || !password) return { ok: false, message: "Enter your handle or email and your password.", status: 400 };
  try {
    const account = await services.signIn.withPassword(identifier, password, clientAddress(request));
    return { ok: true, account, setCookie: await startSession(services, request, account.did) };
  } catch (error) {
    if (error instanceof SignInError) return { ok: false, message: error.message, status: 400 };
    if (error instanceof TooManyRequestsError) return { ok: false, message: error.description, status: 429, retryAfterSeconds: error.retryAfterSeconds };
    throw error;
  }
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
