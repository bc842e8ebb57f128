import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "../../accounts/password.ts";
import { hasCode } from "../../errors/atrium-error.ts";
import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import type { SignedIn } from "../browser-session.ts";
import type { PasswordView, SecureAccountView } from "./views.ts";
import { noticeKeyOf, withNotice } from "./notices.ts";
import { type FormErrors, type PageOutcome, errorOutcome, formErrorOf, formErrors, redirectTo } from "../outcome.ts";
import { confirmView, confirmWithPassword } from "./reauthentication.ts";
import { signedInAction, signedInPage } from "./signed-in-page.ts";

/** GET /account/password; right after a change, also the offer to secure the account. */
export async function showPasswordPage(services: Services, request: Request, t: Translate): Promise<PageOutcome<PasswordView>> {
  return signedInPage(services, request, t, async (signedIn, base) => ({
    ...base,
    kind: "password",
    minLength: PASSWORD_MIN_LENGTH,
    secure: await secureAccountView(services, request, signedIn),
  }));
}

/**
 * The offer is shown on the page a change redirects to (and after "Confirm
 * it's you" for it); the counts are there for the form's wording either way.
 */
async function secureAccountView(services: Services, request: Request, signedIn: SignedIn): Promise<SecureAccountView> {
  const notice = noticeKeyOf(request);
  const [passkeys, apps] = await Promise.all([services.passkeys.list(signedIn.account.did), services.connectedApps.list(signedIn.account.did)]);
  return {
    offered: notice === "password-changed" || notice === "secure-confirmed",
    passkeys: passkeys.length,
    apps: apps.length,
    confirm: signedIn.recentlyAuthenticated ? undefined : await confirmView(services, signedIn, "/account/password"),
  };
}

/** POST /account/password: change the password (no intent, or intent=change), secure the account, or confirm it's you. */
export async function answerPasswordPage(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  return signedInAction(services, request, form, t, async (signedIn) => {
    switch (form("intent")) {
      case "":
      case "change":
        return changePassword(services, request, signedIn, form, t);
      case "secure":
        return secureAccount(services, signedIn, form, t);
      case "confirm":
        return confirmWithPassword(services, request, signedIn, form("password"), "/account/password", t);
    }
    return errorOutcome(400, t("errors:page.nothingToDo"), t("errors:page.noIntent"));
  });
}

/**
 * Current + new + confirmation. The current password is checked through the
 * sign-in throttle (a stolen session cannot guess it at full speed) and
 * counts as a recent authentication (docs/decisions/0007); a change signs
 * out every other browser.
 */
async function changePassword(
  services: Services,
  request: Request,
  { account, sessionIdHash }: SignedIn,
  form: (name: string) => string,
  t: Translate,
): Promise<PageOutcome<FormErrors>> {
  const current = form("current_password");
  const next = form("new_password");
  const confirm = form("confirm_password");
  const errors: Record<string, string> = {};
  if (!current) errors.current_password = t("errors:form.enterCurrentPassword");
  if (next.length < PASSWORD_MIN_LENGTH) errors.new_password = t("errors:form.passwordTooShort", { count: PASSWORD_MIN_LENGTH });
  else if (next.length > PASSWORD_MAX_LENGTH) errors.new_password = t("errors:form.passwordTooLong");
  else if (next === current) errors.new_password = t("errors:form.passwordSame");
  if (!errors.new_password && confirm !== next) errors.confirm_password = t("errors:form.passwordMismatch");
  if (Object.keys(errors).length) return formErrors("password", errors);

  try {
    // Counted on this browser session's own counter: nobody elsewhere can keep its owner from changing the password.
    await services.signIn.confirmPassword(account.did, current, sessionIdHash);
    await services.accounts.changePassword(account.did, current, next, sessionIdHash);
  } catch (error) {
    if (hasCode(error, "sign_in_failed", "password_wrong")) return formErrors("password", { current_password: t("errors:form.currentPasswordWrong") });
    if (hasCode(error, "password_invalid")) return formErrors("password", { new_password: t("errors:form.passwordRejected") });
    // A wait belongs to the whole form.
    return formErrorOf(error, t, "password", "form");
  }
  // The current password was just checked: that is a recent authentication (docs/decisions/0007).
  await services.sessions.markAuthenticated(sessionIdHash);
  return redirectTo(withNotice("/account/password", "password-changed"));
}

/**
 * "Secure your account": every passkey removed, every other browser signed
 * out, and (ticked by default) every app disconnected. It needs a recent
 * authentication: it is what a person does when someone else may be in.
 */
async function secureAccount(
  services: Services,
  { account, sessionIdHash, recentlyAuthenticated }: SignedIn,
  form: (name: string) => string,
  t: Translate,
): Promise<PageOutcome<FormErrors>> {
  if (!recentlyAuthenticated) {
    return formErrors("secure", { form: t("errors:form.confirmFirst") }, undefined, 403);
  }
  const disconnectApps = form("disconnect_apps") === "on";
  await services.accounts.secure(account.did, sessionIdHash, { disconnectApps });
  return redirectTo(withNotice("/account/password", disconnectApps ? "account-secured-apps" : "account-secured"));
}
