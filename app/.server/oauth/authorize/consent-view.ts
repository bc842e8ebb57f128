import type { AccountSummary } from "../../accounts/account-manager.ts";
import { describeScope, type PermissionDescription } from "../scopes/scope-description.ts";
import type { PendingAuthorization } from "./authorize-manager.ts";

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
    clientUri?: string;
    tosUri?: string;
    policyUri?: string;
  };
  permissions: PermissionDescription[];
  scope: string;
  account?: { handle: string; did: string };
  /** Password needed on Allow: nobody is signed in, or the app asked for prompt=login. */
  requireLogin: boolean;
  loginHint?: string;
  csrfToken: string;
};

export function consentView(pending: PendingAuthorization, account: AccountSummary | undefined, csrfToken: string): ConsentView {
  const { client, request } = pending;
  const { parameters } = request;
  const requireLogin = !account || parameters.prompt === "login";
  return {
    kind: "consent",
    requestUri: pending.requestUri,
    clientId: client.clientId,
    client: {
      name: client.clientName,
      host: client.isLoopback ? "this device" : new URL(client.clientId).host,
      redirectUri: parameters.redirect_uri,
      isLoopback: client.isLoopback,
      clientUri: client.clientUri,
      tosUri: client.tosUri,
      policyUri: client.policyUri,
    },
    permissions: describeScope(parameters.scope),
    scope: parameters.scope,
    account: account ? { handle: account.handle, did: account.did } : undefined,
    requireLogin,
    loginHint: parameters.login_hint,
    csrfToken,
  };
}
