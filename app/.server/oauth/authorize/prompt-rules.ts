import { canonicalIdentifier } from "../../accounts/identifiers.ts";
import type { AuthorizationParameters } from "../request/request-store.ts";

/**
 * The OIDC rules of an authorization request that a browser answers (OIDC Core §3.1.2.1 `prompt` and `login_hint`,
 * §3.1.2.6 the errors of prompt=none) and the remembered-consent rules of docs/decisions/0020, framework-free: the
 * consent screen asks these functions what to do and only renders their outcome.
 */

/** An account signed in in this browser, as the rules see it. */
export type BrowserAccount = {
  account: { did: string; handle: string; email: string };
  /** When this browser's session of the account began (a sign-in). */
  signedInAt: Date;
  /** Its person chose "Stay signed in on this device" (docs/decisions/0020). */
  staySignedIn: boolean;
};

/** What the rules read of a pending request. */
export type PromptRequest = {
  clientId: string;
  parameters: Pick<AuthorizationParameters, "prompt" | "login_hint" | "scope">;
  createdAt: number;
};

/**
 * What an account has answered a client, measured against a request: nothing ever, less than this request asks, or
 * all of it (`covers`: each value allowed and nothing of it taken back since, or an optional one declined);
 * `declined`, the values of this request the person said no to before (docs/decisions/0032); `askedAgain`, what of
 * the request is not allowed now: values never allowed, and the parts of allowed ones taken back since, as scope
 * values (docs/decisions/0053).
 */
export type RememberedConsent = { status: "never" | "narrower" | "covers"; declined: string[]; askedAgain: string[] };

/** Remembered consent, as the rules ask for it (ConnectedApps.consentFor). */
export type ConsentLookup = { consentFor(accountDid: string, clientId: string, scope: string): Promise<RememberedConsent> };

/**
 * The scope values a person may decline while allowing the rest (issue 19, item 8): those that give the email
 * address. The reference provider lets a person untick email too; every other permission is the app's to ask for.
 */
export function isOptionalValue(value: string): boolean {
  return value === "transition:email" || value === "account:email" || value.startsWith("account:email?");
}

function valuesOf(scope: string): string[] {
  return scope.split(" ").filter(Boolean);
}

/**
 * The scope an approval grants: the request's, less the values declined. RFC 6749 §3.3: "The authorization server
 * MAY fully or partially ignore the scope requested by the client, based on the authorization server policy or the
 * resource owner's instructions"; the token response's `scope` then says what was granted.
 */
export function grantedScope(scope: string, declined: readonly string[]): string {
  return valuesOf(scope)
    .filter((value) => !declined.includes(value))
    .join(" ");
}

/**
 * What the screen offered about the optional values and what the person did: the email box ticked, unticked, or not
 * on the page at all (a page from before the box, or a form that did not render it).
 */
export type OptionalChoice = "shared" | "declined" | "not-offered";

/**
 * The values of the request an Allow declines: the box decides when the screen offered it; otherwise what the person
 * declined before holds, so a remembered "no" is never turned into a "yes" by a form that did not ask.
 */
export function declinedOnAllow(scope: string, choice: OptionalChoice, rememberedDeclines: readonly string[]): string[] {
  const optional = valuesOf(scope).filter(isOptionalValue);
  if (choice === "declined") return optional;
  if (choice === "shared") return [];
  return optional.filter((value) => rememberedDeclines.includes(value));
}

/**
 * Whether a login_hint (handle, email or DID, in any case, with or without "@") names this account. An email hints
 * only where the person sees the screen: under prompt=none, an app allowed before (without the email permission)
 * would otherwise learn, one silent navigation per guess, whether a guessed email is the account's.
 */
export function hintNames(hint: string, account: BrowserAccount["account"], options: { byEmail: boolean } = { byEmail: true }): boolean {
  const text = canonicalIdentifier(hint);
  return text === account.handle || text === account.did || (options.byEmail && text === account.email);
}

/**
 * The accounts signed in here that may answer this request (docs/decisions/0020):
 * - OIDC Core §3.1.2.1: prompt=login "SHOULD prompt the End-User for reauthentication": a session from before the
 *   request does not count, one started on this screen (password or passkey) does. So with prompt=create (Initiating
 *   User Registration via OpenID Connect 1.0: the client "desires that the user be shown the account creation UI",
 *   docs/decisions/0052): the account made on this screen answers, or one signed in here instead.
 * - OIDC Core §3.1.2.1: login_hint is a "hint to the Authorization Server about the login identifier the End-User
 *   might use": a session of another account is not the one the app asked for, so the person signs in (and
 *   prompt=none gets login_required) instead of the app silently receiving a code for someone else.
 */
export function accountsThatMayAnswer<A extends BrowserAccount>(accounts: readonly A[], request: PromptRequest): A[] {
  const { parameters, createdAt } = request;
  return accounts.filter(
    (signedIn) =>
      ((parameters.prompt !== "login" && parameters.prompt !== "create") || signedIn.signedInAt.getTime() >= createdAt) &&
      (parameters.login_hint === undefined || hintNames(parameters.login_hint, signedIn.account, { byEmail: parameters.prompt !== "none" })),
  );
}

/** What the screen asks of the person: to allow as one account, to choose among several, to sign in, or to sign up. */
export type ScreenStep<A extends BrowserAccount> = { kind: "account"; signedIn: A } | { kind: "choose"; accounts: A[] } | { kind: "sign-in" } | { kind: "sign-up" };

/**
 * What the person chose on the screen's own links: "Use another account" (`add`), an account of the chooser, the
 * chooser itself, "Create an account" (`create`).
 */
export type ScreenChoice = { add: boolean; account: string | null; choose: boolean; create?: boolean };

/**
 * The screen's step for this browser. "Use another account" asks for a sign-in that adds an account; an account
 * chosen on the chooser counts only when it is signed in here and may answer; prompt=select_account ("The
 * Authorization Server SHOULD prompt the End-User to select a user account", OIDC Core §3.1.2.1) and the chooser
 * link show the chooser whenever there is an account to choose; otherwise one account is used as it is, and several
 * are offered to choose from. While sign-up is open here (`signUpOpen`), "Create an account" shows the sign-up form, and
 * so does prompt=create when no account may answer yet (docs/decisions/0052): never an automatic Allow for the new
 * account, whose consent screen comes next.
 */
export function screenStep<A extends BrowserAccount>(request: PromptRequest, accounts: readonly A[], choice: ScreenChoice, signUpOpen = false): ScreenStep<A> {
  if (choice.add) return { kind: "sign-in" };
  if (choice.create && signUpOpen) return { kind: "sign-up" };
  const candidates = accountsThatMayAnswer(accounts, request);
  const chosen = candidates.find((signedIn) => signedIn.account.did === choice.account);
  if (chosen) return { kind: "account", signedIn: chosen };
  if (candidates.length === 0) return request.parameters.prompt === "create" && signUpOpen ? { kind: "sign-up" } : { kind: "sign-in" };
  const wantsChooser = request.parameters.prompt === "select_account" || choice.choose;
  if (candidates.length === 1 && !wantsChooser) return { kind: "account", signedIn: candidates[0]! };
  return { kind: "choose", accounts: candidates };
}

/**
 * prompt=login set this browser's sessions aside: the sign-in form names the account that was signed in (to fill in)
 * and says why. Not when the person asked to add another account.
 */
export function setAsideByPromptLogin(request: PromptRequest, step: ScreenStep<BrowserAccount>, choice: ScreenChoice): boolean {
  return request.parameters.prompt === "login" && step.kind === "sign-in" && !choice.add;
}

/**
 * What the screen says of the account's earlier answers: `remembered`, whether it may say the app was allowed before
 * (and so offer a shorter screen); `declined`, the optional values the person said no to, which the screen shows
 * unticked as they were left; `askedAgain`, when the app was allowed part of the request before, the rest, which is
 * all the screen asks for. OIDC Core §3.1.2.1: prompt=consent "SHOULD prompt the End-User for consent before
 * returning information to the Client": remembered consent is then not claimed, but the boxes still show the
 * person's last answer.
 */
export async function consentOnScreen(
  consents: ConsentLookup,
  request: PromptRequest,
  accountDid: string,
): Promise<{ remembered: boolean; declined: string[]; askedAgain?: string[] }> {
  const consent = await consents.consentFor(accountDid, request.clientId, request.parameters.scope);
  // Allowed before, but not all of it (more asked, or a part taken back since): the screen asks for just what is not
  // allowed now (docs/decisions/0053); prompt=consent asks for all of it.
  const askedAgain = consent.status === "narrower" && request.parameters.prompt !== "consent" ? { askedAgain: consent.askedAgain } : {};
  return { remembered: request.parameters.prompt !== "consent" && consent.status === "covers", declined: consent.declined, ...askedAgain };
}

/** The account an Allow without a password acts for: the one the screen named (its hidden field), or, for a form naming none, the only one that may answer. */
export function allowingAccount<A extends BrowserAccount>(request: PromptRequest, accounts: readonly A[], named: string): A | undefined {
  const candidates = accountsThatMayAnswer(accounts, request);
  if (named) return candidates.find((signedIn) => signedIn.account.did === named);
  return candidates.length === 1 ? candidates[0] : undefined;
}

/** The errors prompt=none answers with (OIDC Core §3.1.2.6). */
export type SilentRefusal = "login_required" | "consent_required" | "account_selection_required";

/**
 * What prompt=none does: issue a code for an account, for the scope its remembered consent grants (less what the
 * person declined before: `declined`), or send one of the errors back, never a screen.
 */
export type SilentAnswer<A extends BrowserAccount> =
  | { kind: "approve"; signedIn: A; scope: string; declined: string[] }
  | { kind: "refuse"; error: SilentRefusal; description: string };

const REFUSALS: Record<SilentRefusal, string> = {
  // One description for every login_required: it must not tell apart the reasons a browser may have.
  login_required: "The user must sign in",
  consent_required: "The user must approve this request",
  account_selection_required: "Several accounts are signed in; the user must choose one",
};

const refuse = (error: SilentRefusal): { kind: "refuse"; error: SilentRefusal; description: string } => ({ kind: "refuse", error, description: REFUSALS[error] });

/**
 * OIDC Core §3.1.2.1: prompt=none "The Authorization Server MUST NOT display any authentication or consent user
 * interface pages". It answers silently only for the one account that may answer, when its person chose to stay
 * signed in on this device and has allowed this before (docs/decisions/0020); otherwise the client is told why not.
 *
 * What the client learns about the browser is kept to clients the browser's own accounts have allowed (issue 16,
 * hole 5; docs/decisions/0023b): a site could push prompt=none with login_hint=<a guessed handle> as its own client
 * and navigate its visitors to the screen, learning from consent_required against login_required who they are,
 * one navigation per guess and no click. So a client that none of the accounts that may answer ever allowed gets
 * login_required whatever the browser holds: the hinted account signed in or not, staying signed in or not, one
 * account or several (account_selection_required would tell "several" apart in the same way).
 */
export async function silentAnswer<A extends BrowserAccount>(consents: ConsentLookup, request: PromptRequest, accounts: readonly A[]): Promise<SilentAnswer<A>> {
  const { clientId, parameters } = request;
  const candidates = accountsThatMayAnswer(accounts, request);
  const remembered = await Promise.all(candidates.map((signedIn) => consents.consentFor(signedIn.account.did, clientId, parameters.scope)));
  if (remembered.every((consent) => consent.status === "never")) return refuse("login_required");
  if (candidates.length > 1) return refuse("account_selection_required");
  const only = candidates[0]!;
  if (!only.staySignedIn) return refuse("login_required");
  const consent = remembered[0]!;
  if (consent.status !== "covers") return refuse("consent_required");
  // The person's "no" to an optional value holds without a screen: the code is for the rest.
  return { kind: "approve", signedIn: only, scope: grantedScope(parameters.scope, consent.declined), declined: consent.declined };
}
