import { oauthApp, splitCallTarget, type ActivityKind, type ActivityLine } from "../../activity/activity-lines.ts";
import type { ConnectedApp } from "../../accounts/connected-apps.ts";
import { formatItem, itemCovers, itemsOfScope, type PermissionItem } from "../../oauth/scopes/permission-items.ts";
import { describeScopeValue } from "../../oauth/scopes/scope-description.ts";
import { appPagePath, clientIdOfAppPage } from "../../oauth/metadata/server-metadata.ts";
import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { errorOutcome, redirectTo, type PageOutcome } from "../outcome.ts";
import { activityLineView, historyViews } from "./activity-views.ts";
import { appView } from "./apps-page.ts";
import { withNotice } from "./notices.ts";
import { signedInAction, signedInPage } from "./signed-in-page.ts";
import type { ActivityLineView, AppPageView, PermissionItemView } from "./views.ts";

/**
 * /account/apps/<client_id> (docs/decisions/0053): one app's page, at the address the authorization server metadata
 * gives apps to link to (oauth/metadata/server-metadata.ts). What the app did in the kept days, each line with the
 * permission it used and a control to take that back, and every permission it holds with the same control. With
 * `?take-back=<permission>` (a broad permission's button, a GET form), the confirmation first.
 */
export async function showAppPage(services: Services, request: Request, t: Translate): Promise<PageOutcome<AppPageView>> {
  const clientId = clientIdOfAppPage(new URL(request.url).pathname) ?? "";
  const outcome = await signedInPage(services, request, t, async ({ account }, base): Promise<AppPageView | undefined> => {
    const app = await services.connectedApps.find(account.did, clientId);
    if (!app) return undefined;
    const history = await historyViews(services, account.did, oauthApp(clientId), (line) => lineView(app, line, t));
    const permissions = permissionViews(app, t);
    const takeBack = new URL(request.url).searchParams.get("take-back");
    return {
      ...base,
      kind: "app",
      app: await appView(services, app, t),
      address: `${services.config.issuer}${appPagePath(clientId)}`,
      ...history,
      permissions,
      takingBack: permissions.find((permission) => permission.item === takeBack && !permission.takenBack),
    };
  });
  if (outcome.kind !== "view") return outcome;
  return outcome.view ? { ...outcome, view: outcome.view } : notConnected(t);
}

/**
 * POST /account/apps/<client_id>: intent=take-back takes one permission back from the app (ConnectedApps.takeBack):
 * refused to its tokens from their next call, left out of its next refresh's scope, asked again if it asks for it.
 */
export async function answerAppPage(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<never>> {
  const clientId = clientIdOfAppPage(new URL(request.url).pathname) ?? "";
  return signedInAction(services, request, form, t, async ({ account }) => {
    if (form("intent") !== "take-back" || !form("permission")) return errorOutcome(400, t("errors:page.nothingToDo"), t("errors:page.noPermissionToTakeBack"));
    const result = await services.connectedApps.takeBack(account.did, clientId, form("permission"));
    if (result === "not-connected") return notConnected(t);
    if (result === "not-granted") return errorOutcome(400, t("errors:page.nothingToDo"), t("errors:page.permissionNotGranted"));
    return redirectTo(withNotice(appPagePath(clientId), "permission-taken-back"));
  });
}

function notConnected<V>(t: Translate): PageOutcome<V> {
  return errorOutcome(404, t("account:app.notConnected.title"), t("account:app.notConnected.message"));
}

/** Every permission the app holds, one per item, each marked when it was taken back. */
function permissionViews(app: ConnectedApp, t: Translate): PermissionItemView[] {
  return itemsOfScope(app.scope).map((item) => itemView(app, item, t));
}

function itemView(app: ConnectedApp, item: PermissionItem, t: Translate): PermissionItemView {
  return { item: formatItem(item), title: itemTitle(item, t), broad: isBroad(item), takenBack: app.withdrawn.some((taken) => itemCovers(taken, item)) };
}

/** The item in plain words: the scope value that grants exactly it, described as the consent screen describes it. */
function itemTitle(item: PermissionItem, t: Translate): string {
  // transition:generic's calls have no scope value of their own (rpc:*?aud=* is not one).
  if (item.kind === "rpc" && item.lxm === "*" && item.aud === "*") return t("account:app.anyServiceCall");
  return describeScopeValue(formatItem(item), t).title;
}

/**
 * Whether taking the item back cuts a wide reach (every kind of record, every upload, every method, the whole identity,
 * the chat): its button asks to confirm first. One kind of record, one media type or one method is taken back at once.
 */
function isBroad(item: PermissionItem): boolean {
  switch (item.kind) {
    case "repo":
      return item.collection === "*";
    case "blob":
      return item.accept.endsWith("/*");
    case "rpc":
      return item.lxm === "*";
    case "identity":
      return item.attr === "*";
    case "chat":
      return true;
    case "account":
      return false;
  }
}

/** What a line of the history did, as one permission item (undefined: the kind's overflow, of no one target). */
function lineItem(kind: ActivityKind, target: string): PermissionItem | undefined {
  if (target === "") return undefined;
  switch (kind) {
    case "create":
    case "update":
    case "delete":
      return { kind: "repo", collection: target, action: kind };
    case "blob":
      return { kind: "blob", accept: target };
    case "call": {
      const { lxm, service } = splitCallTarget(target);
      return { kind: "rpc", lxm, aud: service };
    }
  }
}

/**
 * A line of the history with the permission it used: the narrowest the app holds that covers it. Its control takes
 * back just what the line did (this kind of record and action, this media type, this method of this service).
 */
function lineView(app: ConnectedApp, line: ActivityLine, t: Translate): ActivityLineView {
  const item = lineItem(line.kind, line.target);
  const granted = item ? itemsOfScope(app.scope).filter((part) => itemCovers(part, item)) : [];
  const used = granted.find((part) => !isBroad(part)) ?? granted[0];
  return {
    ...activityLineView(line),
    ...(used ? { permission: itemTitle(used, t) } : {}),
    ...(item && used ? { item: formatItem(item) } : {}),
    takenBack: item !== undefined && app.withdrawn.some((taken) => itemCovers(taken, item)),
  };
}
