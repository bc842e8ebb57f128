import { hasCode } from "../../errors/atrium-error.ts";
import { languageOf, type Translate } from "../../i18n/translate.ts";
import { requestClientAddress } from "../../http/browser.ts";
import type { Services } from "../../services.ts";
import type { SignedIn } from "../browser-session.ts";
import { errorOutcome, formErrorOf, formErrors, redirectTo, type FormErrors, type PageOutcome } from "../outcome.ts";
import { withNotice } from "./notices.ts";
import { confirmView, confirmWithPassword } from "./reauthentication.ts";
import { signedInAction, signedInPage } from "./signed-in-page.ts";
import type { EmailView } from "./views.ts";

/**
 * /account/email (docs/decisions/0030, issue 19 item 9): the account's email address, changed with a code sent to the
 * new one. Asking for the code needs a recent authentication (docs/decisions/0007), as the other changes that hand
 * the account to whoever holds them do: the email address is where password resets go.
 */

/** GET /account/email. */
export async function showEmailPage(services: Services, request: Request, t: Translate): Promise<PageOutcome<EmailView>> {
  return signedInPage(services, request, t, async (signedIn, base) => ({
    ...base,
    kind: "email",
    available: services.emailUpdate.available,
    email: (await services.accounts.findByDid(signedIn.account.did))?.email ?? "",
    pendingEmail: await services.emailUpdate.pendingAddress(signedIn.account.did),
    minutes: Math.round(services.config.lifetimes.typedCode / 60_000),
    serviceName: services.config.brand.serviceName,
    confirm: signedIn.recentlyAuthenticated ? undefined : await confirmView(services, signedIn, "/account/email"),
  }));
}

/** POST /account/email: intent=request sends a code to the new address, intent=change confirms it, intent=confirm is "Confirm it's you". */
export async function answerEmailPage(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  return signedInAction(services, request, form, t, async (signedIn) => {
    switch (form("intent")) {
      case "request":
        return requestCode(services, request, signedIn, form, t);
      case "change":
        return changeEmail(services, signedIn, form, t);
      case "confirm":
        return confirmWithPassword(services, request, signedIn, form("password"), "/account/email", t);
    }
    return errorOutcome(400, t("errors:page.nothingToDo"), t("errors:page.noIntent"));
  });
}

async function requestCode(services: Services, request: Request, { account, recentlyAuthenticated }: SignedIn, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  const email = form("email").trim();
  if (!recentlyAuthenticated) return formErrors("email-request", { form: t("errors:form.confirmFirst") }, { email }, 403);
  if (!email) return formErrors("email-request", { email: t("errors:emailChange.invalid") }, { email });
  try {
    // The email is written in the language of the page that asked for it.
    await services.emailUpdate.request(account.did, email, languageOf(t), requestClientAddress(request));
  } catch (error) {
    return formErrorOf(error, t, "email-request", "form", { email }, ["email"]);
  }
  return redirectTo(withNotice("/account/email", "email-code-sent"));
}

async function changeEmail(services: Services, { account }: SignedIn, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  const code = form("code").trim();
  if (!code) return formErrors("email-change", { code: t("errors:form.enterCode") });
  try {
    await services.emailUpdate.confirm(account.did, code, languageOf(t));
  } catch (error) {
    // A right code whose address another account took meanwhile: the code is spent; the person starts again.
    if (hasCode(error, "email_taken")) return formErrors("email-request", { email: t("errors:emailChange.taken") });
    return formErrorOf(error, t, "email-change", "code", { code }, ["code"]);
  }
  return redirectTo(withNotice("/account/email", "email-changed"));
}
