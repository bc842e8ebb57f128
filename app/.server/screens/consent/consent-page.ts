import type { AccountSummary } from "../../accounts/account-manager.ts";
import { canonicalIdentifier } from "../../accounts/identifiers.ts";
import { cookieNames, readCookie, serializeCookie } from "../../http/browser.ts";
import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { AuthorizationPageError, type PendingAuthorization } from "../../oauth/authorize/authorize-manager.ts";
import { csrfToken, currentSession, isTrustedPost, signInWithPassword, withCookies } from "../browser-session.ts";
import { forbiddenForm, formErrorOf, formErrors, redirectTo, view, type FormErrors, type PageOutcome } from "../outcome.ts";
import { consentView, type ConsentView } from "./consent-view.ts";

/**
 * The consent screen's server side, framework-free: what GET shows and what
 * each form post does. The Remix route only adapts these to responses
 * (screens/respond.ts), like the account pages.
 */

/** The browser's signed-in account; with `signedInSince`, only a session started at or after that time counts. */
async function signedInAccount(services: Services, request: Request, signedInSince?: number): Promise<AccountSummary | undefined> {
  const signedIn = await currentSession(services, request);
  if (signedIn && signedInSince !== undefined && signedIn.signedInAt.getTime() < signedInSince) return undefined;
  return signedIn?.account;
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

/** Only request_uris issued by /oauth/par are accepted here (RFC 9126 §4; `require_pushed_authorization_requests`). */
export function refuseConventionalRequest(url: URL): never {
  const conventional = url.searchParams.has("response_type") || url.searchParams.has("redirect_uri");
  throw new AuthorizationPageError(conventional ? "request_unsupported" : "request_invalid", conventional ? "unsupported" : "noRequestUri");
}

/** GET /oauth/authorize. */
export async function showConsentPage(services: Services, request: Request, t: Translate): Promise<PageOutcome<ConsentView>> {
  const url = new URL(request.url);
  if (!url.searchParams.get("request_uri")) refuseConventionalRequest(url);
  const pending = await services.authorize.load(url.searchParams.get("client_id"), url.searchParams.get("request_uri"));
  const { parameters } = pending.request;
  const account = await accountFor(services, request, pending);
  const remembered = account ? await services.connectedApps.covers(account.did, pending.client.clientId, parameters.scope) : false;

  // OIDC Core §3.1.2.1: prompt=none never shows a screen. Remembered consent
  // of a signed-in account is approved; otherwise the client is told why not.
  if (parameters.prompt === "none") {
    if (account && remembered) return redirectTo(await approve(services, pending, account));
    return redirectTo(
      account
        ? await services.authorize.reject(pending, "consent_required", "The user must approve this request")
        : await services.authorize.reject(pending, "login_required", "The user is not signed in"),
    );
  }
  // prompt=consent always shows the screen: remembered consent is then not claimed.
  const rememberedConsent = remembered && parameters.prompt !== "consent";
  const headers = new Headers();
  const token = csrfToken(services, request, headers);
  // Offered whenever any passkey is registered here, whatever login_hint says: offering it only for hinted accounts
  // that have one would tell anyone probing with hints which identifiers are registered.
  const passkeyOptions = (await services.passkeys.offerPasskeys())
    ? await services.passkeys.authenticationOptions({ requestIdHash: pending.request.idHash })
    : undefined;
  // prompt=login set aside this browser's session: the screen names its account (to fill in) and says why.
  const earlierAccount = !account && parameters.prompt === "login" ? await signedInAccount(services, request) : undefined;
  const service = { serviceName: services.config.brand.serviceName, issuer: services.config.issuer };
  return view(consentView(pending, { account, earlierAccount, service, csrfToken: token, rememberedConsent, passkeyOptions }, t), headers);
}

/** POST /oauth/authorize: the screen's own form (Origin and CSRF checked first). */
export async function answerConsentForm(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  if (!isTrustedPost(services, request, form("csrf_token"))) {
    return forbiddenForm(t);
  }
  const pending = await services.authorize.load(form("client_id"), form("request_uri"));
  const { config } = services;
  const decision = form("decision");
  if (decision === "deny") {
    // Denying never needs a password.
    return redirectTo(await services.authorize.reject(pending, "access_denied", "The user denied the request"));
  }
  if (decision === "switch_account") {
    await services.sessions.destroy(readCookie(request, cookieNames(config).session));
    const here = new URL(request.url);
    return redirectTo(`${here.pathname}${here.search}`, new Headers({ "Set-Cookie": serializeCookie(config, cookieNames(config).session, "", 0) }));
  }
  if (decision !== "allow") return formErrors("consent", { form: t("errors:form.chooseAllowOrDeny") });

  const identifier = form("identifier");
  const password = form("password");
  const headers = new Headers();
  let account = await accountFor(services, request, pending);
  if (password) {
    try {
      const signedIn = await signInWithPassword(services, request, identifier, password);
      account = signedIn.account;
      withCookies(headers, signedIn.setCookies);
    } catch (error) {
      return formErrorOf(error, t, "consent", "form", { identifier });
    }
  }
  if (!account) return formErrors("consent", { form: t("errors:form.signInToAllow") }, { identifier }, 400, headers);
  return redirectTo(await approve(services, pending, account), headers);
}

/** Issues the code and remembers the consent for next time. */
async function approve(services: Services, pending: PendingAuthorization, account: AccountSummary): Promise<string> {
  const location = await services.authorize.approve(pending, account.did);
  await services.connectedApps.remember(account.did, pending.client.clientId, pending.request.parameters.scope);
  return location;
}
