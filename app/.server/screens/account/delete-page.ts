import { hasCode } from "../../errors/atrium-error.ts";
import { IdentityError } from "../../identity/identity-error.ts";
import { languageOf, type Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { endSession, withCookies } from "../browser-session.ts";
import { requestClientAddress } from "../../http/browser.ts";
import { errorOutcome, formErrorOf, formErrors, redirectTo, type FormErrors, type PageOutcome } from "../outcome.ts";
import { withNotice } from "./notices.ts";
import { signedInAction, signedInPage } from "./signed-in-page.ts";
import type { DeleteAccountView } from "./views.ts";

/**
 * /account/delete (docs/decisions/0030): com.atproto.server.requestAccountDelete and deleteAccount as a page. The
 * person asks for a code (emailed to the account's address), then confirms with the code and the password; the
 * account and everything it owns here end together, and this browser is signed out of it. The DID is left as it is,
 * unless the person asks to end it too, which is offered only while this server's key is its only rotation key
 * (docs/decisions/0050).
 */

/** GET /account/delete. */
export async function showDeletePage(services: Services, request: Request, t: Translate): Promise<PageOutcome<DeleteAccountView>> {
  return signedInPage(services, request, t, async ({ account }, base) => ({
    ...base,
    kind: "delete",
    available: services.accountDeletion.available,
    codeSent: await services.accountDeletion.hasLiveCode(account.did),
    canEndIdentity: (await services.accountDeletion.identityControl(account.did)) === "sole",
    minutes: Math.round(services.config.lifetimes.typedCode / 60_000),
    serviceName: services.config.brand.serviceName,
    supportUrl: services.config.brand.supportUrl,
  }));
}

/** POST /account/delete: intent=request emails a code; intent=delete deletes with the code and the password. */
export async function answerDeletePage(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  return signedInAction(services, request, form, t, async ({ account }) => {
    switch (form("intent")) {
      case "request":
        try {
          // The email is written in the language of the page that asked for it.
          await services.accountDeletion.request(account.did, requestClientAddress(request), languageOf(t));
        } catch (error) {
          // A wait: said on the page, by the button that asked.
          return formErrorOf(error, t, "request", "form");
        }
        return redirectTo(withNotice("/account/delete", "deletion-code-sent"));
      case "delete":
        return deleteAccount(services, request, account.did, form, t);
    }
    return errorOutcome(400, t("errors:page.nothingToDo"), t("errors:page.noIntent"));
  });
}

async function deleteAccount(services: Services, request: Request, did: string, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  const code = form("code").trim();
  const password = form("password");
  const endIdentity = form("endIdentity") === "1";
  const errors: Record<string, string> = {};
  if (!code) errors.code = t("errors:form.enterCode");
  if (!password) errors.password = t("errors:form.enterPassword");
  const values = { code, ...(endIdentity ? { endIdentity: "1" } : {}) };
  if (Object.keys(errors).length) return formErrors("delete", errors, values);
  try {
    await services.accountDeletion.confirm(did, code, password, { endIdentity });
  } catch (error) {
    if (hasCode(error, "deletion_code_invalid")) return formErrors("delete", { code: t("errors:deletion.invalidCode") }, values);
    if (hasCode(error, "password_wrong")) return formErrors("delete", { password: t("errors:form.passwordWrong") }, values);
    // The DID gained a key of the person's own, or moved, since the page offered to end it: not this server's to end.
    if (hasCode(error, "tombstone_refused")) return formErrors("delete", { endIdentity: t("errors:deletion.cannotEnd") }, { code });
    // The directory did not answer or refused: nothing here was deleted, and the same code works for a retry.
    if (error instanceof IdentityError) return formErrors("delete", { form: t("errors:deletion.directoryFailed") }, values, 502);
    throw error;
  }
  // The account's sessions went with it; this browser forgets it, and its other accounts stay signed in.
  return redirectTo(withNotice("/account", "account-deleted"), withCookies(new Headers(), await endSession(services, request, did)));
}
