import type { PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/server";
import type { AccountSummary } from "../../accounts/account-manager.ts";
import type { Translate } from "../../i18n/translate.ts";
import { describeScope, groupPermissions, summarizePermissions, type PermissionDescription, type PermissionGroups, type SummaryLine } from "../../oauth/scopes/scope-description.ts";
import type { PendingAuthorization } from "../../oauth/authorize/authorize-manager.ts";
import { isOptionalValue } from "../../oauth/authorize/prompt-rules.ts";
import { clientIdentity, type ClientIdentityView, type ServiceIdentity } from "../client-identity.ts";
import type { ReactivationView } from "./consent-reactivation.ts";

/**
 * Which step the screen is at, for its heading: signing in, signing in again (the app sent prompt=login),
 * allowing (signed in), continuing (signed in, and this access was allowed before), or reactivating the signed-in
 * account first (issue 28, item 17).
 */
export type ConsentStep = "choose" | "sign-in" | "sign-in-again" | "allow" | "continue" | "reactivate";

/** What the consent screen shows: plain data, safe to send to the browser. */
export type ConsentView = {
  kind: "consent";
  requestUri: string;
  clientId: string;
  /** Who is asking: what was verified first (host, or a loopback app), then what the app claims (screens/client-identity.ts). */
  client: ClientIdentityView & {
    /** Where the answer goes (for a loopback app, its only distinguishing mark: address and port). */
    redirectUri: string;
    /** Self-declared by the client's metadata, like its name. */
    clientUri?: string;
    tosUri?: string;
    policyUri?: string;
  };
  step: ConsentStep;
  /** Permissions requested directly, in plain words. */
  permissions: PermissionDescription[];
  /** The same permissions grouped by family (repository table, uploads, calls, account, identity). */
  groups: PermissionGroups;
  /** One line per family in plain words, never broader than the grant (scope-description.ts, summarizePermissions). */
  summary: SummaryLine[];
  /** Permission sets (include:), by their title and detail, with what they expand to. */
  permissionSets: { nsid: string; title: string; detail?: string; permissions: PermissionDescription[]; groups: PermissionGroups }[];
  scope: string;
  account?: { handle: string; did: string };
  /** Sign-in needed on Allow: nobody is signed in, or the app asked for prompt=login and the session is older than the request. */
  requireLogin: boolean;
  loginHint?: string;
  /**
   * prompt=login: the app asked for a fresh sign-in, so a session from before its request does not count (the
   * screen says so); `handle` is that earlier session's account, to fill in.
   */
  freshSignIn?: { handle?: string };
  csrfToken: string;
  /** The signed-in account already allowed this client all of this (remembered consent): one click. */
  rememberedConsent: boolean;
  /**
   * The signed-in account is deactivated (docs/decisions/0031): the screen says so and offers "Reactivate and
   * continue" instead of Allow (`reactivation`); an app never receives a code for it.
   */
  accountDeactivated: boolean;
  /** Reactivating in the flow (issue 28, item 17): with `confirm`, the password (or a passkey) is proved first. */
  reactivation?: ReactivationView;
  /** What another page did before sending the person back here (a reset password, a reactivated account). */
  notice?: string;
  /** Passkey sign-in, offered when at least one passkey is registered (for the hinted account, if any). */
  passkey?: { options: PublicKeyCredentialRequestOptionsJSON };
  /** The account chooser (docs/decisions/0020): the accounts signed in here that may answer, one button each. */
  chooser?: { handle: string; did: string }[];
  /** How many other accounts are signed in here (the signed-in account's box then offers to choose one). */
  otherAccounts: number;
  /** The sign-in form adds an account: others stay signed in here. */
  addingAccount: boolean;
  /** The screen's own addresses for "Use another account" and "Choose another account" (no JavaScript needed). */
  links: { useAnother: string; choose: string };
  /** The request asks for the email address, which the person may decline while allowing the rest (issue 19). */
  emailOptional: boolean;
  /** The person declined it the last time this app asked (docs/decisions/0032): the box shows unticked, as they left it. */
  emailDeclined: boolean;
};

/** Whether a requested scope asks for an optional value the person may untick (the email address). */
function asksForOptional(scope: string): boolean {
  return scope.split(" ").some(isOptionalValue);
}

export type ConsentContext = {
  account?: AccountSummary;
  /** The browser's account whose session the app's prompt=login did not accept. */
  earlierAccount?: AccountSummary;
  service: ServiceIdentity;
  csrfToken: string;
  rememberedConsent: boolean;
  /** The optional values of this request the account declined before (oauth/authorize/prompt-rules.ts, consentOnScreen). */
  declinedBefore: readonly string[];
  passkeyOptions?: PublicKeyCredentialRequestOptionsJSON;
  chooser?: { handle: string; did: string }[];
  otherAccounts: number;
  addingAccount: boolean;
  links: { useAnother: string; choose: string };
  /** The signed-in account is deactivated: no Allow, and the screen says why (docs/decisions/0031). */
  accountDeactivated?: boolean;
  reactivation?: ReactivationView;
  notice?: string;
};

export function consentView(pending: PendingAuthorization, context: ConsentContext, t: Translate): ConsentView {
  const { account, csrfToken } = context;
  const { client, request } = pending;
  const { parameters } = request;
  // The caller passes no account when prompt=login and the session predates the request.
  const requireLogin = !account && !context.chooser;
  const fromSets = new Set((parameters.permission_sets ?? []).flatMap((set) => set.scopes));
  const groups = groupPermissions(directScope(parameters.scope, fromSets), t);
  const emailOptional = asksForOptional(parameters.scope);
  return {
    kind: "consent",
    requestUri: pending.requestUri,
    clientId: client.clientId,
    client: {
      ...clientIdentity(
        { clientId: client.clientId, name: client.clientName, logoUri: client.logoUri, nameHadHiddenCharacters: client.clientNameHadHiddenCharacters },
        context.service,
      ),
      redirectUri: parameters.redirect_uri,
      clientUri: client.clientUri,
      tosUri: client.tosUri,
      policyUri: client.policyUri,
    },
    step: stepOf(context, requireLogin, parameters.prompt),
    permissions: describeScope(directScope(parameters.scope, fromSets), t),
    groups,
    summary: summarizePermissions(groups, t, { hideEmail: emailOptional }),
    permissionSets: (parameters.permission_sets ?? []).map((set) => ({
      nsid: set.nsid,
      title: set.title ?? set.nsid,
      detail: set.detail,
      permissions: describeScope(set.scopes.join(" "), t),
      groups: groupPermissions(set.scopes.join(" "), t),
    })),
    scope: parameters.scope,
    account: account ? { handle: account.handle, did: account.did } : undefined,
    requireLogin,
    loginHint: parameters.login_hint,
    freshSignIn: requireLogin && parameters.prompt === "login" ? { handle: context.earlierAccount?.handle } : undefined,
    csrfToken,
    rememberedConsent: Boolean(account) && !requireLogin && context.rememberedConsent,
    passkey: context.passkeyOptions ? { options: context.passkeyOptions } : undefined,
    chooser: context.chooser,
    otherAccounts: context.otherAccounts,
    addingAccount: context.addingAccount,
    links: context.links,
    emailOptional,
    emailDeclined: Boolean(account) && context.declinedBefore.some(isOptionalValue),
    accountDeactivated: Boolean(account) && !requireLogin && Boolean(context.accountDeactivated),
    reactivation: account && !requireLogin && context.accountDeactivated ? (context.reactivation ?? {}) : undefined,
    notice: context.notice,
  };
}

function stepOf(context: ConsentContext, requireLogin: boolean, prompt: string | undefined): ConsentStep {
  if (context.chooser) return "choose";
  if (requireLogin) return prompt === "login" ? "sign-in-again" : "sign-in";
  if (context.accountDeactivated) return "reactivate";
  return context.rememberedConsent ? "continue" : "allow";
}

/** The scope values not contributed by a permission set (those are shown under their set). */
function directScope(scope: string, fromSets: Set<string>): string {
  return scope
    .split(" ")
    .filter((value) => value && !fromSets.has(value))
    .join(" ");
}
