import { AccountError } from "../accounts/account-manager.ts";
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "../accounts/password.ts";
import { SignInError } from "../accounts/sign-in.ts";
import { clientAddress } from "../http/browser.ts";
import { TooManyRequestsError } from "../oauth/errors/oauth-error.ts";
import type { Services } from "../services.ts";
import type { PasswordView } from "./account-views.ts";
import { withNotice } from "./notices.ts";
import { formErrors, redirectTo, type FormErrors, type PageOutcome } from "./outcome.ts";
import { signedInAction, signedInPage } from "./signed-in-page.ts";

/** GET /account/password. */
export async function showPasswordPage(services: Services, request: Request): Promise<PageOutcome<PasswordView>> {
  return signedInPage(services, request, async (_signedIn, base) => ({ ...base, kind: "password", minLength: PASSWORD_MIN_LENGTH }));
}

/**
 * POST /account/password: current + new + confirmation. The current
 * password is checked through the sign-in throttle (a stolen session cannot
 * guess it at full speed); a change signs out every other browser.
 */
export async function answerPasswordPage(services: Services, request: Request, form: (name: string) => string): Promise<PageOutcome<FormErrors>> {
  return signedInAction(services, request, form, async ({ account, sessionIdHash }) => {
    const current = form("current_password");
    const next = form("new_password");
    const confirm = form("confirm_password");
    const errors: Record<string, string> = {};
    if (!current) errors.current_password = "Enter your current password.";
    if (next.length < PASSWORD_MIN_LENGTH) errors.new_password = `Use at least ${PASSWORD_MIN_LENGTH} characters.`;
    else if (next.length > PASSWORD_MAX_LENGTH) errors.new_password = "That password is too long.";
    else if (next === current) errors.new_password = "Choose a password different from the current one.";
    if (!errors.new_password && confirm !== next) errors.confirm_password = "This does not match the new password.";
    if (Object.keys(errors).length) return formErrors("password", errors);

    try {
      await services.signIn.withPassword(account.did, current, clientAddress(request));
      await services.accounts.changePassword(account.did, current, next);
    } catch (error) {
      if (error instanceof SignInError) return formErrors("password", { current_password: "The current password is not right." });
      if (error instanceof TooManyRequestsError) {
        return formErrors("password", { form: error.description }, undefined, 429, new Headers({ "Retry-After": String(error.retryAfterSeconds) }));
      }
      if (error instanceof AccountError) return formErrors("password", { current_password: error.message });
      throw error;
    }
    await services.sessions.destroyOthers(account.did, sessionIdHash);
    // The current password was just checked: that is a recent authentication (docs/decisions/0007).
    await services.sessions.markAuthenticated(sessionIdHash);
    return redirectTo(withNotice("/account/password", "password-changed"));
  });
}
