import type { AccountSummary } from "../../accounts/account-manager.ts";
import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { AuthorizationPageError, AuthorizationReturnError, type PendingAuthorization } from "../../oauth/authorize/authorize-manager.ts";
import {
  allowingAccount,
  consentOnScreen,
  declinedOnAllow,
  grantedScope,
  screenStep,
  setAsideByPromptLogin,
  silentAnswer,
  type OptionalChoice,
  type ScreenChoice,
} from "../../oauth/authorize/prompt-rules.ts";
import { browserOf, csrfToken, currentSession, isTrustedPost, signedInAccounts, signInWithPassword, withCookies } from "../browser-session.ts";
import { errorPageOf, forbiddenForm, formErrorOf, formErrors, redirectTo, view, type FormErrors, type PageOutcome } from "../outcome.ts";
import { consentView, type ConsentView } from "./consent-view.ts";
import { clientIdentity } from "../client-identity.ts";
import { requestClientAddress } from "../../http/browser.ts";
import { screenLanguage } from "../../i18n/screen-language.ts";
import { answerSignUp, firstStepValues, signedUp, signUpView, type SignUpFrame, type SignUpView } from "../sign-up/sign-up-page.ts";
import { screenAddress, screenNoticeOf } from "./consent-address.ts";
import { reactivateInFlow, reactivationView, screenRequest } from "./consent-reactivation.ts";

/**
 * The consent screen's server side, framework-free: what GET shows and what
 * each form post does. The Remix route only adapts these to responses
 * (screens/respond.ts), like the account pages.
 */

/** The screen's own address with its step's parameters (the request's client_id and request_uri, and one of ours). */
function screenAddressOf(pending: PendingAuthorization, extra: Record<string, string> = {}): string {
  return screenAddress(screenRequest(pending), extra);
}

/** What the person chose on the screen's own links (oauth/authorize/prompt-rules.ts reads it). */
function choiceOf(url: URL): ScreenChoice {
  return { add: url.searchParams.get("add") === "1", account: url.searchParams.get("account"), choose: url.searchParams.get("choose") === "1", create: url.searchParams.get("create") === "1" };
}

/**
 * The sign-up form as a step of this request (docs/decisions/0052): it posts here, names the app as the consent screen
 * does, and "Sign in instead" is the screen's sign-in form.
 */
function signUpFrame(services: Services, pending: PendingAuthorization): SignUpFrame {
  const { client } = pending;
  return {
    action: "/oauth/authorize",
    hidden: { client_id: client.clientId, request_uri: pending.requestUri },
    signInHref: screenAddressOf(pending, { add: "1" }),
    handleStepHref: ({ name, domain }) => screenAddressOf(pending, { create: "1", name, domain }),
    client: clientIdentity(
      { clientId: client.clientId, name: client.clientName, logoUri: client.logoUri, nameHadHiddenCharacters: client.clientNameHadHiddenCharacters },
      { serviceName: services.config.brand.serviceName, issuer: services.config.issuer },
    ),
  };
}

/** Only request_uris issued by /oauth/par are accepted here (RFC 9126 §4; `require_pushed_authorization_requests`). */
export function refuseConventionalRequest(url: URL): never {
  const conventional = url.searchParams.has("response_type") || url.searchParams.has("redirect_uri");
  throw new AuthorizationPageError(conventional ? "request_unsupported" : "request_invalid", conventional ? "unsupported" : "noRequestUri");
}

/**
 * A request that expired or was answered already, but whose app is known, sends the browser it was shown to back to
 * that app with access_denied (docs/decisions/0020); any other browser gets a page naming the app's host, with a
 * button there (docs/decisions/0022). Everything else goes on as thrown.
 */
async function orBackToApp<V>(t: Translate, outcome: () => Promise<PageOutcome<V>>): Promise<PageOutcome<V>> {
  try {
    return await outcome();
  } catch (error) {
    if (!(error instanceof AuthorizationReturnError)) throw error;
    if (error.automatic) return redirectTo(error.location);
    return errorPageOf(error, t, { href: error.location, label: t("errors:authorize.otherBrowser.continue", { host: error.host }) });
  }
}

/** GET /oauth/authorize. */
export async function showConsentPage(services: Services, request: Request, t: Translate): Promise<PageOutcome<ConsentView | SignUpView>> {
  return orBackToApp(t, () => consentPage(services, request, t));
}

/** POST /oauth/authorize: the screen's own form (Origin and CSRF checked first). */
export async function answerConsentForm(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors | SignUpView>> {
  return orBackToApp(t, () => consentForm(services, request, form, t));
}

async function consentPage(services: Services, request: Request, t: Translate): Promise<PageOutcome<ConsentView | SignUpView>> {
  const url = new URL(request.url);
  if (!url.searchParams.get("request_uri")) refuseConventionalRequest(url);
  const pending = await services.authorize.load(url.searchParams.get("client_id"), url.searchParams.get("request_uri"), browserOf(services, request));
  const { parameters } = pending.request;
  const accounts = await signedInAccounts(services, request);

  // The prompt, login_hint and remembered-consent rules are oauth/authorize/prompt-rules.ts's; this renders them.
  if (parameters.prompt === "none") {
    const answer = await silentAnswer(services.connectedApps, pending.request, accounts);
    const state = answer.kind === "approve" ? await services.accountStatus.stateOf(answer.signedIn.account.did) : undefined;
    if (state === "deactivated" || state === "takendown") {
      // The reference's answer: an app never silently receives a code for a deactivated account (docs/decisions/0031),
      // nor for one the operator took down (docs/decisions/0051).
      return redirectTo(await services.authorize.reject(pending, "access_denied", state === "takendown" ? "This account has been taken down" : "This account has been deactivated"));
    }
    if (answer.kind === "approve") return redirectTo(await approve(services, request, pending, answer.signedIn.account, answer.declined));
    return redirectTo(await services.authorize.reject(pending, answer.error, answer.description));
  }

  const choice = choiceOf(url);
  const signUpOpen = services.signUp.enabled;
  const step = screenStep(pending.request, accounts, choice, signUpOpen);
  if (step.kind === "sign-up") {
    const headers = new Headers();
    return view(signUpView(services, signUpFrame(services, pending), csrfToken(services, request, headers), { step: "handle", values: firstStepValues(url) }), headers);
  }
  const account = step.kind === "account" ? step.signedIn.account : undefined;
  const earlierAnswer = account ? await consentOnScreen(services.connectedApps, pending.request, account.did) : { remembered: false, declined: [] };
  const accountDeactivated = account ? await isDeactivated(services, account.did) : false;
  // A deactivated account is reactivated here, then comes back to this request (issue 28, item 17).
  const reactivation = step.kind === "account" && accountDeactivated ? await reactivationView(services, step.signedIn, pending) : undefined;
  const headers = new Headers();
  const token = csrfToken(services, request, headers);
  // Offered whenever any passkey is registered here, whatever login_hint says: offering it only for hinted accounts
  // that have one would tell anyone probing with hints which identifiers are registered.
  const passkeyOptions =
    step.kind === "sign-in" && (await services.passkeys.offerPasskeys())
      ? await services.passkeys.authenticationOptions({ requestIdHash: pending.request.idHash })
      : undefined;
  // prompt=login set aside this browser's sessions: the screen names the account (to fill in) and says why.
  const earlier = setAsideByPromptLogin(pending.request, step, choice) ? (await currentSession(services, request))?.account : undefined;
  const service = { serviceName: services.config.brand.serviceName, issuer: services.config.issuer };
  return view(
    consentView(
      pending,
      {
        account,
        earlierAccount: earlier,
        service,
        csrfToken: token,
        rememberedConsent: earlierAnswer.remembered,
        declinedBefore: earlierAnswer.declined,
        askedAgain: earlierAnswer.askedAgain,
        accountDeactivated,
        reactivation,
        notice: screenNoticeOf(url, t),
        passkeyOptions,
        chooser: step.kind === "choose" ? step.accounts.map((signedIn) => ({ handle: signedIn.account.handle, did: signedIn.account.did })) : undefined,
        otherAccounts: accounts.filter((signedIn) => signedIn.account.did !== account?.did).length,
        addingAccount: step.kind === "sign-in" && accounts.length > 0,
        links: {
          useAnother: screenAddressOf(pending, { add: "1" }),
          choose: screenAddressOf(pending, { choose: "1" }),
          createAccount: signUpOpen ? screenAddressOf(pending, { create: "1" }) : undefined,
        },
      },
      t,
    ),
    headers,
  );
}

async function consentForm(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors | SignUpView>> {
  if (!isTrustedPost(services, request, form("csrf_token"))) {
    return forbiddenForm(t);
  }
  const pending = await services.authorize.load(form("client_id"), form("request_uri"), browserOf(services, request));
  const intent = form("intent");
  if (intent === "sign-up-handle" || intent === "sign-up") {
    // After the sign-up, this request's consent screen for the new account: never an automatic Allow (docs/decisions/0052).
    const token = csrfToken(services, request, new Headers());
    return answerSignUp(services, request, form, t, signUpFrame(services, pending), token, (account) => signedUp(services, request, account, screenAddressOf(pending, { account: account.did })));
  }
  const decision = form("decision");
  if (decision === "deny") {
    // Denying never needs a password.
    return redirectTo(await services.authorize.reject(pending, "access_denied", "The user denied the request"));
  }
  if (decision === "reactivate") return reactivateInFlow(services, request, pending, form, t);
  if (decision === "switch_account") {
    // "Use another account" adds one: the accounts signed in here stay signed in (docs/decisions/0020).
    return redirectTo(screenAddressOf(pending, { add: "1" }));
  }
  // The chooser's buttons name an account; "Choose another account" names none.
  const chosen = form("choose_account");
  if (chosen) return redirectTo(screenAddressOf(pending, { account: chosen }));
  if (decision === "choose") return redirectTo(screenAddressOf(pending, { choose: "1" }));
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
    account = allowingAccount(pending.request, await signedInAccounts(services, request), form("account"))?.account;
  }
  if (!account) return formErrors("consent", { form: t("errors:form.signInToAllow") }, { identifier }, 400, headers);
  // Signing in to a deactivated account is allowed (it is how the person reactivates it), allowing an app is not: the
  // screen, for this account, offers reactivation and then this request again (issue 28, item 17). No code. A
  // taken-down account signs in nowhere (SignIn), and its sessions are gone; one taken down since the screen was shown
  // is refused its code by the store (docs/decisions/0051).
  if (await isDeactivated(services, account.did)) return redirectTo(screenAddressOf(pending, { account: account.did }), headers);
  return redirectTo(await approve(services, request, pending, account, await declinedByForm(services, pending, account, form)), headers);
}

/**
 * What the Allow declines (oauth/authorize/prompt-rules.ts, declinedOnAllow): "Share your email address" unticked, or,
 * on a form that did not offer the box (`email_choice` is how the screen says it did), what was declined before.
 */
async function declinedByForm(services: Services, pending: PendingAuthorization, account: AccountSummary, form: (name: string) => string): Promise<string[]> {
  const { scope } = pending.request.parameters;
  const choice: OptionalChoice = form("email_choice") !== "1" ? "not-offered" : form("share_email") === "on" ? "shared" : "declined";
  const remembered = choice === "not-offered" ? (await services.connectedApps.consentFor(account.did, pending.client.clientId, scope)).declined : [];
  return declinedOnAllow(scope, choice, remembered);
}

async function isDeactivated(services: Services, did: string): Promise<boolean> {
  return (await services.accountStatus.statusOf(did))?.active === false;
}

/** Issues the code for the request's scope less what the person declined, and remembers both (docs/decisions/0032). */
async function approve(services: Services, request: Request, pending: PendingAuthorization, account: AccountSummary, declined: string[]): Promise<string> {
  const scope = grantedScope(pending.request.parameters.scope, declined);
  const location = await services.authorize.approve(pending, account.did, scope);
  const { firstTime } = await services.connectedApps.remember(account.did, pending.client.clientId, scope, declined);
  if (firstTime) await tellOfNewApp(services, request, pending, account.did);
  return location;
}

/**
 * docs/decisions/0056: the account's address is told an app was given access for the first time, the app named as
 * this screen showed it: the verified host first, the name it claims beside it. Nothing here fails the consent.
 */
async function tellOfNewApp(services: Services, request: Request, pending: PendingAuthorization, accountDid: string): Promise<void> {
  const { client } = pending;
  const identity = clientIdentity({ clientId: client.clientId, name: client.clientName }, { serviceName: services.config.brand.serviceName, issuer: services.config.issuer });
  const where = identity.hostUnicode ?? identity.host ?? identity.redirectUris?.[0] ?? client.clientId;
  const since = (await services.connectedApps.find(accountDid, client.clientId).catch(() => undefined))?.firstAuthorizedAt.getTime();
  if (since === undefined) return;
  await services.signInNotices.appAllowed({
    accountDid,
    clientId: client.clientId,
    appName: identity.name ? `${identity.name} (${where})` : where,
    since,
    address: requestClientAddress(request),
    language: await screenLanguage(services, request),
  });
}
