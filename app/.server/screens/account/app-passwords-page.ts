import type { ListedAppPassword } from "../../accounts/app-password-store.ts";
import { APP_PASSWORD_NAME_MAX_LENGTH } from "../../accounts/app-passwords.ts";
import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import type { SignedIn } from "../browser-session.ts";
import { errorOutcome, formErrorOf, formErrors, redirectTo, view, type FormErrors, type PageOutcome } from "../outcome.ts";
import { withNotice } from "./notices.ts";
import { confirmView, confirmWithPassword } from "./reauthentication.ts";
import { signedInAction, signedInPage } from "./signed-in-page.ts";
import type { AppPasswordsView, AppPasswordView, CreatedAppPasswordView } from "./views.ts";

export const APP_PASSWORDS_PATH = "/account/app-passwords";
const PATH = APP_PASSWORDS_PATH;

/** An app password's page: the list's path, a slash and its id (one segment: ids are base64url). */
export function appPasswordPagePath(id: string): string {
  return `${PATH}/${encodeURIComponent(id)}`;
}

/**
 * /account/app-passwords (docs/decisions/0047): app passwords, made, listed and revoked as createAppPassword,
 * listAppPasswords and revokeAppPassword do, and the emailed sign-in code of password sessions. Creating an app
 * password hands whoever holds it the account's data, as adding a passkey does: it needs a recent authentication
 * (docs/decisions/0007), so that a stolen session cookie alone cannot plant one; so does turning the code on or off.
 * Revoking needs nothing more than being signed in: it only takes access away.
 */

/** GET /account/app-passwords; with `?revoke=<name>` (a Revoke button, a GET form), its confirmation first. */
export async function showAppPasswords(services: Services, request: Request, t: Translate): Promise<PageOutcome<AppPasswordsView>> {
  const revoke = new URL(request.url).searchParams.get("revoke");
  return signedInPage(services, request, t, async (signedIn, base) => {
    const did = signedIn.account.did;
    const appPasswords = (await services.appPasswords.list(did)).map(appPasswordView);
    const email = await services.accounts.emailOf(did);
    return {
      ...base,
      kind: "app-passwords",
      enabled: services.passwordSessions.enabled,
      appPasswords,
      revoking: appPasswords.find((appPassword) => appPassword.name === revoke),
      nameMaxLength: APP_PASSWORD_NAME_MAX_LENGTH,
      signInCode: { available: services.emailAuthFactor.available, on: email?.emailAuthFactor ?? false, email: email?.email ?? "" },
      confirm: signedIn.recentlyAuthenticated ? undefined : await confirmView(services, signedIn, PATH),
    };
  });
}

/**
 * POST /account/app-passwords: intent=create answers the new password (shown once, in this answer), intent=revoke
 * (the confirmation's button), intent=sign-in-code turns the emailed code on or off, intent=confirm is "Confirm it's
 * you". Taking the chat back from a privileged one is on its own page (app-password-page.ts).
 */
export async function answerAppPasswords(
  services: Services,
  request: Request,
  form: (name: string) => string,
  t: Translate,
): Promise<PageOutcome<FormErrors | CreatedAppPasswordView>> {
  return signedInAction(services, request, form, t, async (signedIn) => {
    switch (form("intent")) {
      case "create":
        return create(services, signedIn, form, t);
      case "revoke":
        if (!form("name")) return errorOutcome(400, t("errors:page.nothingToDo"), t("errors:page.noAppPasswordToRevoke"));
        await services.appPasswords.revoke(signedIn.account.did, form("name"));
        return redirectTo(withNotice(PATH, "app-password-revoked"));
      case "sign-in-code":
        return setSignInCode(services, signedIn, form("on") === "1", t);
      case "confirm":
        return confirmWithPassword(services, request, signedIn, form("password"), PATH, t);
    }
    return errorOutcome(400, t("errors:page.nothingToDo"), t("errors:page.noIntent"));
  });
}

async function create(services: Services, { account, recentlyAuthenticated }: SignedIn, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors | CreatedAppPasswordView>> {
  const name = form("name");
  const values = { name, privileged: form("privileged") };
  if (!recentlyAuthenticated) return formErrors("app-password-create", { form: t("errors:form.confirmFirst") }, values, 403);
  if (!services.passwordSessions.enabled) return formErrors("app-password-create", { form: t("errors:appPasswords.off") }, values, 403);
  try {
    const created = await services.appPasswords.create(account.did, name, form("privileged") === "1");
    return view({ kind: "app-password-created", name: created.name, password: created.password, handle: account.handle });
  } catch (error) {
    return formErrorOf(error, t, "app-password-create", "name", values, ["name"]);
  }
}

async function setSignInCode(services: Services, { account, recentlyAuthenticated }: SignedIn, on: boolean, t: Translate): Promise<PageOutcome<FormErrors>> {
  if (!recentlyAuthenticated) return formErrors("sign-in-code", { form: t("errors:form.confirmFirst") }, undefined, 403);
  // Turning it on needs a way to send the code; turning it off never does.
  if (on && !services.emailAuthFactor.available) return formErrors("sign-in-code", { form: t("account:appPasswords.signInCode.noEmail") }, undefined, 400);
  await services.emailAuthFactor.set(account.did, on);
  return redirectTo(withNotice(PATH, on ? "sign-in-code-on" : "sign-in-code-off"));
}

export function appPasswordView(appPassword: ListedAppPassword): AppPasswordView {
  return {
    id: appPassword.id,
    pagePath: appPasswordPagePath(appPassword.id),
    name: appPassword.name,
    privileged: appPassword.privileged,
    createdAt: new Date(appPassword.createdAt).toISOString(),
    ...(appPassword.lastUsedAt === null ? {} : { lastUsedAt: new Date(appPassword.lastUsedAt).toISOString() }),
  };
}
