import type { AccountSummary } from "../../accounts/account-manager.ts";
import { canonicalIdentifier } from "../../accounts/identifiers.ts";
import { SignInError } from "../../accounts/sign-in.ts";
import { clientAddress, cookieNames, csrfFor, readCookie, serializeCookie } from "../../http/browser.ts";
import type { Services } from "../../services.ts";
import { TooManyRequestsError } from "../errors/oauth-error.ts";
import { AuthorizationPageError, type PendingAuthorization } from "./authorize-manager.ts";
import { consentView, type ConsentView } from "./consent-view.ts";

/**
 * The consent screen's server side, framework-free: what GET shows and what
 * each form post does. The Remix route only adapts these to responses.
 */

export type PageOutcome =
  | { kind: "view"; view: ConsentView; headers: Headers }
  | { kind: "redirect"; location: string; headers: Headers }
  | { kind: "form-error"; formError: string; identifier?: string; status: number; headers: Headers };

/** The browser's signed-in account; with `signedInSince`, only a session started at or after that time counts. */
export async function signedInAccount(services: Services, request: Request, signedInSince?: number): Promise<AccountSummary | undefined> {
  const session = await services.sessions.resolve(readCookie(request, cookieNames(services.config).session));
  if (session && signedInSince !== undefined && session.createdAt.getTime() < signedInSince) return undefined;
  return session?.account;
}

/**
 * The account this request may use: the browser's signed-in account, unless
 * the request rules it out.
 * - OIDC Core §3.1.2.1: prompt=login "SHOULD prompt the End-User for
 *   reauthentication": a session from before the request does not count, one
 *   started on this screen (password or passkey) does.
 * - OIDC Core §3.1.2.1: login_hint is a "hint to the Authorization Server
 *   about the login identifier the End-User might use": when it names another
 *   account than the signed-in one, that session is not the one the app asked
 *   for, so the person signs in (and prompt=none gets login_required) instead
 *   of the app silently receiving a code for someone else.
 */
async function accountFor(services: Services, request: Request, pending: PendingAuthorization): Promise<AccountSummary | undefined> {
  const { parameters, createdAt } = pending.request;
  const account = await signedInAccount(services, request, parameters.prompt === "login" ? createdAt : undefined);
  if (account && parameters.login_hint !== undefined && !hintNames(parameters.login_hint, account)) return undefined;
  return account;
}

/** Whether a login_hint (handle, email or DID, in any case, with or without "@") names this account. */
function hintNames(hint: string, account: AccountSummary): boolean {
  const text = canonicalIdentifier(hint);
  return text === account.handle || text === account.email || text === account.did;
}

/** BRIEF §4 rule 6: only request_uris issued by /oauth/par are accepted here. */
export function refuseConventionalRequest(url: URL): never {
  const conventional = url.searchParams.has("response_type") || url.searchParams.has("redirect_uri");
  throw new AuthorizationPageError(
    conventional ? "This app sent an unsupported sign-in request" : "This sign-in link is not valid",
    conventional
      ? "This server only accepts authorization requests pushed to it first (PAR, RFC 9126). The app must send its request to /oauth/par and open this page with the request_uri it gets back."
      : "The link is missing its request_uri. Go back to the app and start signing in again.",
  );
}

/** GET /oauth/authorize. */
export async function showConsentPage(services: Services, request: Request): Promise<PageOutcome> {
  const url = new URL(request.url);
  if (!url.searchParams.get("request_uri")) refuseConventionalRequest(url);
  const pending = await services.authorize.load(url.searchParams.get("client_id"), url.searchParams.get("request_uri"));
  const { parameters } = pending.request;
  const account = await accountFor(services, request, pending);
  const remembered = account ? await services.connectedApps.covers(account.did, pending.client.clientId, parameters.scope) : false;

  // OIDC Core §3.1.2.1: prompt=none never shows a screen. Remembered consent
  // of a signed-in account is approved; otherwise the client is told why not.
  if (parameters.prompt === "none") {
    if (account && remembered) return { kind: "redirect", location: await approve(services, pending, account), headers: new Headers() };
    const location = account
      ? services.authorize.reject(pending, "consent_required", "The user must approve this request")
      : services.authorize.reject(pending, "login_required", "The user is not signed in");
    return { kind: "redirect", location, headers: new Headers() };
  }
  // prompt=consent always shows the screen: remembered consent is then not claimed.
  const rememberedConsent = remembered && parameters.prompt !== "consent";
  const csrf = csrfFor(request, services.config, services.cookieSecret);
  const headers = new Headers();
  if (csrf.setCookie) headers.append("Set-Cookie", csrf.setCookie);
  const hinted = parameters.login_hint ? await services.accounts.findByIdentifier(parameters.login_hint) : undefined;
  const passkeyOptions = (await services.passkeys.offerPasskeys(hinted?.did))
    ? await services.passkeys.authenticationOptions({ requestIdHash: pending.request.idHash })
    : undefined;
  const view = consentView(pending, { account, csrfToken: csrf.token, rememberedConsent, passkeyOptions });
  return { kind: "view", view, headers };
}

/** A consent-screen form post that passed the CSRF and Origin checks. */
export async function answerConsentForm(services: Services, request: Request, pending: PendingAuthorization, form: (name: string) => string): Promise<PageOutcome> {
  const { config } = services;
  const decision = form("decision");
  if (decision === "deny") {
    // Denying never needs a password.
    return { kind: "redirect", location: services.authorize.reject(pending, "access_denied", "The user denied the request"), headers: new Headers() };
  }
  if (decision === "switch_account") {
    await services.sessions.destroy(readCookie(request, cookieNames(config).session));
    const here = new URL(request.url);
    const headers = new Headers({ "Set-Cookie": serializeCookie(config, cookieNames(config).session, "", 0) });
    return { kind: "redirect", location: `${here.pathname}${here.search}`, headers };
  }
  if (decision !== "allow") return { kind: "form-error", formError: "Choose Allow or Deny.", status: 400, headers: new Headers() };

  const headers = new Headers();
  const identifier = form("identifier");
  const password = form("password");
  let account = await accountFor(services, request, pending);
  if (password) {
    try {
      account = await services.signIn.withPassword(identifier, password, clientAddress(request));
    } catch (error) {
      if (error instanceof SignInError) return { kind: "form-error", formError: error.message, identifier, status: 400, headers };
      if (error instanceof TooManyRequestsError) {
        headers.set("Retry-After", String(error.retryAfterSeconds));
        return { kind: "form-error", formError: error.description, identifier, status: 429, headers };
      }
      throw error;
    }
    headers.append("Set-Cookie", await newSessionCookie(services, request, account.did));
  }
  if (!account) return { kind: "form-error", formError: "Sign in with your password to allow access.", identifier, status: 400, headers };
  return { kind: "redirect", location: await approve(services, pending, account), headers };
}

/** Issues the code and remembers the consent for next time. */
async function approve(services: Services, pending: PendingAuthorization, account: AccountSummary): Promise<string> {
  const location = services.authorize.approve(pending, account.did);
  await services.connectedApps.remember(account.did, pending.client.clientId, pending.request.parameters.scope);
  return location;
}

export async function newSessionCookie(services: Services, request: Request, accountDid: string): Promise<string> {
  const { config } = services;
  const sessionId = await services.sessions.create(accountDid, {
    userAgent: request.headers.get("user-agent") ?? undefined,
    ipAddress: clientAddress(request),
  });
  return serializeCookie(config, cookieNames(config).session, sessionId, Math.floor(config.lifetimes.browserSession / 1000));
}
