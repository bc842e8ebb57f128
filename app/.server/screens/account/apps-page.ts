import type { ConnectedApp } from "../../accounts/connected-apps.ts";
import { isLoopbackClientId } from "../../oauth/client/client-metadata.ts";
import type { OAuthClient } from "../../oauth/client/client-metadata.ts";
import { groupPermissions } from "../../oauth/scopes/scope-description.ts";
import { isOptionalValue } from "../../oauth/authorize/prompt-rules.ts";
import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { clientIdentity } from "../client-identity.ts";
import type { AppsView, ConnectedAppView, PasswordSessionView } from "./views.ts";
import type { ListedPasswordSession } from "../../accounts/password-session-store.ts";
import { withNotice } from "./notices.ts";
import { appPagePath } from "../../oauth/metadata/server-metadata.ts";
import { appPasswordPagePath } from "./app-passwords-page.ts";
import { errorOutcome, redirectTo, type PageOutcome } from "../outcome.ts";
import { signedInAction, signedInPage } from "./signed-in-page.ts";

/** How long the page waits for an app's metadata document before showing the app by its host. */
const CLIENT_LOOKUP_TIMEOUT_MS = 3_000;

/**
 * GET /account/apps: every app the account has allowed, with what it may do. With `?revoke=<client_id>` (the
 * Revoke button, a GET form), the confirmation for that app first; an app no longer connected (revoked in another
 * tab) leaves just the list.
 */
export async function showConnectedApps(services: Services, request: Request, t: Translate): Promise<PageOutcome<AppsView>> {
  const query = new URL(request.url).searchParams;
  const revoke = query.get("revoke");
  const signOut = query.get("sign-out");
  return signedInPage(services, request, t, async ({ account }, base) => {
    const apps = await Promise.all((await services.connectedApps.list(account.did)).map((app) => appView(services, app, t)));
    // docs/decisions/0047: the apps signed in with a password, beside those allowed through OAuth.
    const passwordSessions = (await services.passwordSessions.list(account.did)).map(passwordSessionView);
    return {
      ...base,
      kind: "apps",
      apps,
      revoking: apps.find((app) => app.clientId === revoke),
      passwordSessions,
      signingOut: passwordSessions.find((session) => session.id === signOut),
    };
  });
}

/**
 * POST /account/apps: intent=revoke (the confirmation's "Revoke access") ends every token of the app at once and
 * forgets the consent; intent=sign-out ends an app's password session at once (docs/decisions/0047).
 */
export async function answerConnectedApps(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<never>> {
  return signedInAction(services, request, form, t, async ({ account }) => {
    if (form("intent") === "sign-out" && form("session")) {
      await services.passwordSessions.signOut(account.did, form("session"));
      return redirectTo(withNotice("/account/apps", "password-session-ended"));
    }
    if (form("intent") !== "revoke" || !form("client_id")) return errorOutcome(400, t("errors:page.nothingToDo"), t("errors:page.noAppToRevoke"));
    await services.connectedApps.revoke(account.did, form("client_id"));
    return redirectTo(withNotice("/account/apps", "revoked"));
  });
}

function passwordSessionView(session: ListedPasswordSession): PasswordSessionView {
  return {
    id: session.id,
    ...(session.appPasswordName === null || session.appPasswordId === null ? {} : { appPasswordName: session.appPasswordName, appPasswordPagePath: appPasswordPagePath(session.appPasswordId) }),
    ...(session.userAgent === null ? {} : { userAgent: session.userAgent }),
    createdAt: new Date(session.createdAt).toISOString(),
    lastUsedAt: new Date(session.lastUsedAt).toISOString(),
  };
}

export async function appView(services: Services, app: ConnectedApp, t: Translate): Promise<ConnectedAppView> {
  // A loopback app has no document to look up: it is known by its client_id alone.
  const client = isLoopbackClientId(app.clientId) ? undefined : await lookupClient(services, app.clientId);
  const service = { serviceName: services.config.brand.serviceName, issuer: services.config.issuer };
  return {
    ...clientIdentity({ clientId: app.clientId, name: client?.clientName, logoUri: client?.logoUri, nameHadHiddenCharacters: client?.clientNameHadHiddenCharacters }, service),
    clientId: app.clientId,
    pagePath: appPagePath(app.clientId),
    clientUri: client?.clientUri,
    scope: app.scope,
    groups: groupPermissions(app.scope, t),
    emailDeclined: app.declined.some(isOptionalValue),
    firstAuthorizedAt: app.firstAuthorizedAt.toISOString(),
    lastUsedAt: app.lastUsedAt?.toISOString(),
    activeGrants: app.activeGrants,
  };
}

/** The app's metadata (cached, or fetched within a short time); the page shows the host without it. */
async function lookupClient(services: Services, clientId: string): Promise<OAuthClient | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), CLIENT_LOOKUP_TIMEOUT_MS);
  });
  try {
    return await Promise.race([services.clients.getClient(clientId).catch(() => undefined), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
