import { appPasswordApp } from "../../activity/activity-lines.ts";
import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { errorOutcome, redirectTo, type PageOutcome } from "../outcome.ts";
import { historyViews } from "./activity-views.ts";
import { APP_PASSWORDS_PATH, appPasswordPagePath, appPasswordView } from "./app-passwords-page.ts";
import { withNotice } from "./notices.ts";
import { signedInAction, signedInPage } from "./signed-in-page.ts";
import type { AppPasswordPageView } from "./views.ts";

/** The id an app password's page names, from its path (appPasswordPagePath's). */
function idOfPage(request: Request): string {
  const path = new URL(request.url).pathname;
  return path.startsWith(`${APP_PASSWORDS_PATH}/`) ? decodeURIComponent(path.slice(APP_PASSWORDS_PATH.length + 1)) : "";
}

/**
 * /account/app-passwords/<id> (docs/decisions/0053): one app password's page, at an address that stays while it does.
 * What the apps signed in with it did in the kept days (writes, uploads, calls through the proxy, counted as an OAuth
 * app's are), and, for a privileged one, Take back chat access. Its history goes when it is revoked.
 */
export async function showAppPasswordPage(services: Services, request: Request, t: Translate): Promise<PageOutcome<AppPasswordPageView>> {
  const id = idOfPage(request);
  const outcome = await signedInPage(services, request, t, async ({ account }, base): Promise<AppPasswordPageView | undefined> => {
    const appPassword = await services.appPasswords.find(account.did, id);
    if (!appPassword) return undefined;
    return {
      ...base,
      kind: "app-password",
      appPassword: appPasswordView(appPassword),
      address: `${services.config.issuer}${appPasswordPagePath(id)}`,
      ...(await historyViews(services, account.did, appPasswordApp(id))),
    };
  });
  if (outcome.kind !== "view") return outcome;
  return outcome.view ? { ...outcome, view: outcome.view } : notFound(t);
}

/**
 * POST /account/app-passwords/<id>: intent=drop-privilege takes the chat back from a privileged app password
 * (AppPasswords.dropPrivilege): its sessions are refused chat.bsky.* from their next call, the rest kept, signed in.
 */
export async function answerAppPasswordPage(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<never>> {
  const id = idOfPage(request);
  return signedInAction(services, request, form, t, async ({ account }) => {
    if (form("intent") !== "drop-privilege") return errorOutcome(400, t("errors:page.nothingToDo"), t("errors:page.noIntent"));
    const appPassword = await services.appPasswords.find(account.did, id);
    if (!appPassword) return notFound(t);
    // Already without the chat: nothing to take back, and the page says what it has.
    if (appPassword.privileged) await services.appPasswords.dropPrivilege(account.did, id);
    return redirectTo(withNotice(appPasswordPagePath(id), "app-password-chat-taken-back"));
  });
}

function notFound<V>(t: Translate): PageOutcome<V> {
  return errorOutcome(404, t("account:appPassword.notFound.title"), t("account:appPassword.notFound.message"));
}
