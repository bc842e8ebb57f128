import { HANDLE_NAME_MAX, HANDLE_NAME_MIN, HandleError, withDot, type HandleRefusal } from "../../accounts/handle-rules.ts";
import { hasCode } from "../../errors/atrium-error.ts";
import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import type { SignedIn } from "../browser-session.ts";
import type { HandleView } from "./views.ts";
import { withNotice } from "./notices.ts";
import { errorOutcome, formErrorOf, formErrors, redirectTo, type FormErrors, type PageOutcome } from "../outcome.ts";
import { confirmView, confirmWithPassword } from "./reauthentication.ts";
import { signedInAction, signedInPage } from "./signed-in-page.ts";
import { normalizeHandleName } from "../../../lib/handle-name.ts";

const PATH = "/account/handle";

/**
 * GET /account/handle: the new handle's name and one of this server's domains (ATRIUM_USER_DOMAINS). Changing it
 * updates the DID document at the PLC directory first, then the account, then tells the firehose (#identity):
 * AccountManager.updateHandle, as com.atproto.identity.updateHandle does. It needs a recent authentication
 * (docs/decisions/0007): a handle is how people find the account.
 */
export async function showHandlePage(services: Services, request: Request, t: Translate): Promise<PageOutcome<HandleView>> {
  return signedInPage(services, request, t, async (signedIn, base) => ({
    ...base,
    kind: "handle",
    domains: services.config.userDomains.map(withDot),
    limits: { min: HANDLE_NAME_MIN, max: HANDLE_NAME_MAX },
    confirm: signedIn.recentlyAuthenticated ? undefined : await confirmView(services, signedIn, PATH),
  }));
}

/** POST /account/handle: intent=change (name, domain) or intent=confirm ("Confirm it's you"). */
export async function answerHandlePage(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  return signedInAction(services, request, form, t, async (signedIn) => {
    switch (form("intent")) {
      case "change":
        return changeHandle(services, signedIn, form("name"), form("domain"), t);
      case "confirm":
        return confirmWithPassword(services, request, signedIn, form("password"), PATH, t);
    }
    return errorOutcome(400, t("errors:page.nothingToDo"), t("errors:page.noIntent"));
  });
}

/**
 * The form's name and domain make the handle; AccountManager.updateHandle decides it by the one rule every way in uses
 * (accounts/handle-rules.ts), and each of its refusals is said beside the field it concerns.
 */
async function changeHandle(services: Services, signedIn: SignedIn, typedName: string, typedDomain: string, t: Translate): Promise<PageOutcome<FormErrors>> {
  if (!signedIn.recentlyAuthenticated) return formErrors("handle", { form: t("errors:form.confirmFirst") }, { name: typedName }, 403);
  const name = normalizeHandleName(typedName);
  const domain = services.config.userDomains.map(withDot).find((known) => known === typedDomain.trim().toLowerCase());
  const values = { name: typedName, domain: typedDomain };
  if (!name) return formErrors("handle", { name: t("errors:form.handleEnter") }, values);
  if (!domain) return formErrors("handle", { domain: t("errors:form.handleDomain") }, values);
  const handle = `${name}${domain}`;
  if (handle === signedIn.account.handle) return formErrors("handle", { name: t("errors:form.handleSame", { handle }) }, values);
  try {
    await services.accounts.updateHandle(signedIn.account.did, handle);
  } catch (error) {
    if (error instanceof HandleError) return formErrors("handle", refusalOf(error.reason, name, t), values);
    if (hasCode(error, "handle_taken")) return formErrors("handle", { name: t("errors:form.handleTaken", { handle }) }, values);
    // The PLC directory unreachable or refusing: nothing changed here; the message belongs to the whole form.
    return formErrorOf(error, t, "handle", "form", values);
  }
  return redirectTo(withNotice(PATH, "handle-changed"));
}

/** A refused handle, in the words of the field it concerns (a name past the length is too long, whatever else). */
function refusalOf(reason: HandleRefusal, name: string, t: Translate): Record<string, string> {
  const length = { name: t("errors:form.handleLength", { min: HANDLE_NAME_MIN, max: HANDLE_NAME_MAX }) };
  switch (reason) {
    case "too_short":
    case "too_long":
      return length;
    case "characters":
    case "syntax":
      return name.length > HANDLE_NAME_MAX ? length : { name: t("errors:form.handleCharacters") };
    case "reserved":
      return { name: t("errors:form.handleReserved") };
    case "unsupported_domain":
      return { domain: t("errors:form.handleDomain") };
    case "disallowed_tld":
      // ATRIUM_USER_DOMAINS names a domain no handle may use (.local, .example…): the operator's to fix.
      return { domain: t("errors:form.handleInvalid") };
  }
}
