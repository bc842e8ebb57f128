import type { AccountSummary } from "../../accounts/account-manager.ts";
import { canonicalIdentifier } from "../../accounts/identifiers.ts";
import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { AuthorizationPageError, AuthorizationReturnError, type PendingAuthorization } from "../../oauth/authorize/authorize-manager.ts";
import { csrfToken, currentSession, isTrustedPost, signedInAccounts, signInWithPassword, withCookies, type SignedIn } from "../browser-session.ts";
import { forbiddenForm, formErrorOf, formErrors, redirectTo, view, type FormErrors, type PageOutcome } from "../outcome.ts";
import { asksForEmail, consentView, withoutEmail, type ConsentView } from "./consent-view.ts";

/**
 * The consent screen's server side, framework-free: what GET shows and what
 * each form post does. The Remix route only adapts these to responses
 * (screens/respond.ts), like the account pages.
 */

/**
 * The accounts signed in here that may answer this request (docs/decisions/0020):
 * - OIDC Core §3.1.2.1: prompt=login "SHOULD prompt the End-User for
 *   reauthentication": a session from before the request does not count, one
 *   started on this screen (password or passkey) does.
 * - OIDC Core §3.1.2.1: login_hint is a "hint to the Authorization Server
 *   about the login identifier the End-User might use": a session of another
 *   account is not the one the app asked for, so the person signs in (and
 *   prompt=none gets login_required) instead of the app silently receiving a
 *   code for someone else.
 */
function eligible(accounts: readonly SignedIn[], pending: PendingAuthorization): SignedIn[] {
  const { parameters, createdAt } = pending.request;
  return accounts.filter(
    (signedIn) =>
      (parameters.prompt !== "login" || signedIn.signedInAt.getTime() >= createdAt) &&
      (parameters.login_hint === undefined || hintNames(parameters.login_hint, signedIn.account)),
  );
}

/** What the screen asks of the person: to allow as one account, to choose among several, or to sign in. */
type Step = { kind: "account"; signedIn: SignedIn } | { kind: "choose"; accounts: SignedIn[] } | { kind: "sign-in" };

/**
 * The screen's step for this browser. `?add=1` ("Use another account") asks for a sign-in that adds an account;
 * `?account=<did>` is an account chosen on the chooser (only one signed in here that may answer counts);
 * prompt=select_account and `?choose=1` show the chooser whenever there is an account to choose; otherwise one
 * account is used as it is, and several are offered to choose from.
 */
function stepFor(url: URL, pending: PendingAuthorization, accounts: readonly SignedIn[]): Step {
  if (url.searchParams.get("add") === "1") return { kind: "sign-in" };
  const candidates = eligible(accounts, pending);
  const chosen = candidates.find((signedIn) => signedIn.account.did === url.searchParams.get("account"));
  if (chosen) return { kind: "account", signedIn: chosen };
  const wantsChooser = pending.request.parameters.prompt === "select_account" || url.searchParams.get("choose") === "1";
  if (candidates.length === 0) return { kind: "sign-in" };
  if (candidates.length === 1 && !wantsChooser) return { kind: "account", signedIn: candidates[0]! };
  return { kind: "choose", accounts: candidates };
}

/** The screen's own address with its step's parameters (the request's client_id and request_uri, and one of ours). */
function screenAddress(pending: PendingAuthorization, extra: Record<string, string> = {}): string {
  return `/oauth/authorize?${new URLSearchParams({ client_id: pending.client.clientId, request_uri: pending.requestUri, ...extra })}`;
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

/**
 * A request that expired or was answered already, but whose app is known, sends the browser back to that app with
 * access_denied (docs/decisions/0020); everything else goes on as thrown.
 */
async function orBackToApp<V>(outcome: () => Promise<PageOutcome<V>>): Promise<PageOutcome<V>> {
  try {
    return await outcome();
  } catch (error) {
    if (error instanceof AuthorizationReturnError) return redirectTo(error.location);
    throw error;
  }
}

/** GET /oauth/authorize. */
export async function showConsentPage(services: Services, request: Request, t: Translate): Promise<PageOutcome<ConsentView>> {
  return orBackToApp(() => consentPage(services, request, t));
}

/** POST /oauth/authorize: the screen's own form (Origin and CSRF checked first). */
export async function answerConsentForm(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  return orBackToApp(() => consentForm(services, request, form, t));
}

async function consentPage(services: Services, request: Request, t: Translate): Promise<PageOutcome<ConsentView>> {
  const url = new URL(request.url);
  if (!url.searchParams.get("request_uri")) refuseConventionalRequest(url);
  const pending = await services.authorize.load(url.searchParams.get("client_id"), url.searchParams.get("request_uri"));
  const { parameters } = pending.request;
  const accounts = await signedInAccounts(services, request);

  // OIDC Core §3.1.2.1: prompt=none never shows a screen. It answers silently only for the one account that may
  // answer, when its person chose to stay signed in on this device and has allowed this before
  // (docs/decisions/0020); otherwise the client is told why not.
  if (parameters.prompt === "none") {
    const candidates = eligible(accounts, pending);
    if (candidates.length > 1) {
      return redirectTo(await services.authorize.reject(pending, "account_selection_required", "Several accounts are signed in; the user must choose one"));
    }
    const only = candidates[0];
    if (!only || !only.staySignedIn) return redirectTo(await services.authorize.reject(pending, "login_required", "The user is not signed in"));
    if (await services.connectedApps.covers(only.account.did, pending.client.clientId, parameters.scope)) return redirectTo(await approve(services, pending, only.account));
    return redirectTo(await services.authorize.reject(pending, "consent_required", "The user must approve this request"));
  }

  const step = stepFor(url, pending, accounts);
  const account = step.kind === "account" ? step.signedIn.account : undefined;
  const remembered = account ? await services.connectedApps.covers(account.did, pending.client.clientId, parameters.scope) : false;
  // prompt=consent always shows the screen: remembered consent is then not claimed.
  const rememberedConsent = remembered && parameters.prompt !== "consent";
  const headers = new Headers();
  const token = csrfToken(services, request, headers);
  // Offered whenever any passkey is registered here, whatever login_hint says: offering it only for hinted accounts
  // that have one would tell anyone probing with hints which identifiers are registered.
  const passkeyOptions =
    step.kind === "sign-in" && (await services.passkeys.offerPasskeys())
      ? await services.passkeys.authenticationOptions({ requestIdHash: pending.request.idHash })
      : undefined;
  // prompt=login set aside this browser's sessions: the screen names the account (to fill in) and says why.
  const earlier = parameters.prompt === "login" && step.kind === "sign-in" && url.searchParams.get("add") !== "1" ? (await currentSession(services, request))?.account : undefined;
  const service = { serviceName: services.config.brand.serviceName, issuer: services.config.issuer };
  return view(
    consentView(
      pending,
      {
        account,
        earlierAccount: earlier,
        service,
        csrfToken: token,
        rememberedConsent,
        passkeyOptions,
        chooser: step.kind === "choose" ? step.accounts.map((signedIn) => ({ handle: signedIn.account.handle, did: signedIn.account.did })) : undefined,
        otherAccounts: accounts.filter((signedIn) => signedIn.account.did !== account?.did).length,
        addingAccount: step.kind === "sign-in" && accounts.length > 0,
        links: {
          useAnother: screenAddress(pending, { add: "1" }),
          choose: screenAddress(pending, { choose: "1" }),
        },
      },
      t,
    ),
    headers,
  );
}

async function consentForm(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  if (!isTrustedPost(services, request, form("csrf_token"))) {
    return forbiddenForm(t);
  }
  const pending = await services.authorize.load(form("client_id"), form("request_uri"));
  const decision = form("decision");
  if (decision === "deny") {
    // Denying never needs a password.
    return redirectTo(await services.authorize.reject(pending, "access_denied", "The user denied the request"));
  }
  if (decision === "switch_account") {
    // "Use another account" adds one: the accounts signed in here stay signed in (docs/decisions/0020).
    return redirectTo(screenAddress(pending, { add: "1" }));
  }
  // The chooser's buttons name an account; "Choose another account" names none.
  const chosen = form("choose_account");
  if (chosen) return redirectTo(screenAddress(pending, { account: chosen }));
  if (decision === "choose") return redirectTo(screenAddress(pending, { choose: "1" }));
  if (decision !== "allow") return formErrors("consent", { form: t("errors:form.chooseAllowOrDeny") });

  const identifier = form("identifier");
  const password = form("password");
  const headers = new Headers();
  let account: AccountSummary | undefined;
  if (password) {
    try {
      const signedIn = await signInWithPassword(services, request, identifier, password, form("stay_signed_in") === "on");
      account = signedIn.account;
      withCookies(headers, signedIn.setCookies);
    } catch (error) {
      return formErrorOf(error, t, "consent", "form", { identifier });
    }
  } else {
    // The account the screen was shown for (its hidden field), when it is signed in here and may answer; a form
    // without one (an older page) stands for the only account that may.
    const candidates = eligible(await signedInAccounts(services, request), pending);
    const named = form("account");
    account = (named ? candidates.find((signedIn) => signedIn.account.did === named) : candidates.length === 1 ? candidates[0] : undefined)?.account;
  }
  if (!account) return formErrors("consent", { form: t("errors:form.signInToAllow") }, { identifier }, 400, headers);
  // "Share your email address" unticked (the screen says it offered the choice: an older page without it declines nothing).
  const { scope } = pending.request.parameters;
  const declineEmail = asksForEmail(scope) && form("email_choice") === "1" && form("share_email") !== "on";
  return redirectTo(await approve(services, pending, account, declineEmail ? withoutEmail(scope) : scope), headers);
}

/** Issues the code for the scope the person granted and remembers that consent (what was declined is not in it). */
async function approve(services: Services, pending: PendingAuthorization, account: AccountSummary, scope = pending.request.parameters.scope): Promise<string> {
  const location = await services.authorize.approve(pending, account.did, scope);
  await services.connectedApps.remember(account.did, pending.client.clientId, scope);
  return location;
}
