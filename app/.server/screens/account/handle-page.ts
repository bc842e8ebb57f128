import { isValidHandle } from "@atproto/syntax";
import { hasCode } from "../../errors/atrium-error.ts";
import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import type { SignedIn } from "../browser-session.ts";
import type { HandleView } from "./views.ts";
import { withNotice } from "./notices.ts";
import { errorOutcome, formErrorOf, formErrors, redirectTo, type FormErrors, type PageOutcome } from "../outcome.ts";
import { confirmView, confirmWithPassword } from "./reauthentication.ts";
import { signedInAction, signedInPage } from "./signed-in-page.ts";
import { HANDLE_NAME, HANDLE_NAME_MAX, HANDLE_NAME_MIN, normalizeHandleName } from "../../../lib/handle-name.ts";

const PATH = "/account/handle";

/** The reference PDS's rule for a handle under one of its own domains (app/lib/handle-name.ts). */
const NAME = HANDLE_NAME;
const NAME_MIN = HANDLE_NAME_MIN;
const NAME_MAX = HANDLE_NAME_MAX;

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
    limits: { min: NAME_MIN, max: NAME_MAX },
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

async function changeHandle(services: Services, signedIn: SignedIn, typedName: string, typedDomain: string, t: Translate): Promise<PageOutcome<FormErrors>> {
  if (!signedIn.recentlyAuthenticated) return formErrors("handle", { form: t("errors:form.confirmFirst") }, { name: typedName }, 403);
  const name = normalizeHandleName(typedName);
  const domain = services.config.userDomains.map(withDot).find((known) => known === typedDomain.trim().toLowerCase());
  const values = { name: typedName, domain: typedDomain };
  const nameError = nameProblem(name, t);
  if (nameError) return formErrors("handle", { name: nameError }, values);
  if (!domain) return formErrors("handle", { domain: t("errors:form.handleDomain") }, values);
  const handle = `${name}${domain}`;
  if (!isValidHandle(handle)) return formErrors("handle", { name: t("errors:form.handleInvalid") }, values);
  if (handle === signedIn.account.handle) return formErrors("handle", { name: t("errors:form.handleSame", { handle }) }, values);
  try {
    await services.accounts.updateHandle(signedIn.account.did, handle);
  } catch (error) {
    if (hasCode(error, "handle_taken")) return formErrors("handle", { name: t("errors:form.handleTaken", { handle }) }, values);
    if (hasCode(error, "handle_invalid")) return formErrors("handle", { name: t("errors:form.handleInvalid") }, values);
    // The PLC directory unreachable or refusing: nothing changed here; the message belongs to the whole form.
    return formErrorOf(error, t, "handle", "form", values);
  }
  return redirectTo(withNotice(PATH, "handle-changed"));
}

function nameProblem(name: string, t: Translate): string | undefined {
  if (!name) return t("errors:form.handleEnter");
  if (name.includes(".") || !NAME.test(name)) return t("errors:form.handleCharacters");
  if (name.length < NAME_MIN || name.length > NAME_MAX) return t("errors:form.handleLength", { min: NAME_MIN, max: NAME_MAX });
  return undefined;
}

/** ATRIUM_USER_DOMAINS may be written with or without the leading dot. */
function withDot(domain: string): string {
  const lower = domain.toLowerCase();
  return lower.startsWith(".") ? lower : `.${lower}`;
}
