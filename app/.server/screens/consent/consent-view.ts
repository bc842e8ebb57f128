import type { PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/server";
import type { AccountSummary } from "../../accounts/account-manager.ts";
import { describeScope, groupPermissions, type PermissionDescription, type PermissionGroups } from "../../oauth/scopes/scope-description.ts";
import type { PendingAuthorization } from "../../oauth/authorize/authorize-manager.ts";

/** What the consent screen shows: plain data, safe to send to the browser. */
export type ConsentView = {
  kind: "consent";
  requestUri: string;
  clientId: string;
  client: {
    name?: string;
    host: string;
    redirectUri: string;
    isLoopback: boolean;
    /** Self-declared by the client's metadata, like its name. */
    logoUri?: string;
    clientUri?: string;
    tosUri?: string;
    policyUri?: string;
  };
  /** Permissions requested directly, in plain words. */
  permissions: PermissionDescription[];
  /** The same permissions grouped by family (repository table, uploads, calls, account, identity). */
  groups: PermissionGroups;
  /** Permission sets (include:), by their title and detail, with what they expand to. */
  permissionSets: { nsid: string; title: string; detail?: string; permissions: PermissionDescription[]; groups: PermissionGroups }[];
  scope: string;
  account?: { handle: string; did: string };
  /** Sign-in needed on Allow: nobody is signed in, or the app asked for prompt=login and the session is older than the request. */
  requireLogin: boolean;
  loginHint?: string;
  csrfToken: string;
  /** The signed-in account already allowed this client all of this (remembered consent): one click. */
  rememberedConsent: boolean;
  /** Passkey sign-in, offered when at least one passkey is registered (for the hinted account, if any). */
  passkey?: { options: PublicKeyCredentialRequestOptionsJSON };
};

export type ConsentContext = {
  account?: AccountSummary;
  csrfToken: string;
  rememberedConsent: boolean;
  passkeyOptions?: PublicKeyCredentialRequestOptionsJSON;
};

export function consentView(pending: PendingAuthorization, context: ConsentContext): ConsentView {
  const { account, csrfToken } = context;
  const { client, request } = pending;
  const { parameters } = request;
  // The caller passes no account when prompt=login and the session predates the request.
  const requireLogin = !account;
  const fromSets = new Set((parameters.permission_sets ?? []).flatMap((set) => set.scopes));
  return {
    kind: "consent",
    requestUri: pending.requestUri,
    clientId: client.clientId,
    client: {
      name: client.clientName,
      host: client.isLoopback ? "this device" : new URL(client.clientId).host,
      redirectUri: parameters.redirect_uri,
      isLoopback: client.isLoopback,
      logoUri: client.logoUri,
      clientUri: client.clientUri,
      tosUri: client.tosUri,
      policyUri: client.policyUri,
    },
    permissions: describeScope(directScope(parameters.scope, fromSets)),
    groups: groupPermissions(directScope(parameters.scope, fromSets)),
    permissionSets: (parameters.permission_sets ?? []).map((set) => ({
      nsid: set.nsid,
      title: set.title ?? set.nsid,
      detail: set.detail,
      permissions: describeScope(set.scopes.join(" ")),
      groups: groupPermissions(set.scopes.join(" ")),
    })),
    scope: parameters.scope,
    account: account ? { handle: account.handle, did: account.did } : undefined,
    requireLogin,
    loginHint: parameters.login_hint,
    csrfToken,
    rememberedConsent: Boolean(account) && !requireLogin && context.rememberedConsent,
    passkey: context.passkeyOptions ? { options: context.passkeyOptions } : undefined,
  };
}

/** The scope values not contributed by a permission set (those are shown under their set). */
function directScope(scope: string, fromSets: Set<string>): string {
  return scope
    .split(" ")
    .filter((value) => value && !fromSets.has(value))
    .join(" ");
}
