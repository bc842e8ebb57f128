import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import type { SignedIn } from "../browser-session.ts";
import type { DeactivateView } from "./views.ts";
import { withNotice } from "./notices.ts";
import { errorOutcome, formErrors, redirectTo, type FormErrors, type PageOutcome } from "../outcome.ts";
import { confirmView, confirmWithPassword } from "./reauthentication.ts";
import { signedInAction, signedInPage } from "./signed-in-page.ts";

const PATH = "/account/deactivate";

/**
 * GET /account/deactivate (docs/decisions/0031): what deactivating means, in plain words, and its button; for a
 * deactivated account, since when and the button that reactivates it. Either needs a recent authentication
 * (docs/decisions/0007): a stolen session cookie alone must not take an account off the network, nor put back one
 * its owner took off. Signing in counts, so a person who signs in to reactivate presses one button.
 */
export async function showDeactivatePage(services: Services, request: Request, t: Translate): Promise<PageOutcome<DeactivateView>> {
  return signedInPage(services, request, t, async (signedIn, base) => {
    const status = await services.accountStatus.statusOf(signedIn.account.did);
    return {
      ...base,
      kind: "deactivate",
      deactivatedSince: status?.active === false ? new Date(status.since).toISOString() : undefined,
      confirm: signedIn.recentlyAuthenticated ? undefined : await confirmView(services, signedIn, PATH),
    };
  });
}

/** POST /account/deactivate: intent=deactivate, intent=reactivate, or intent=confirm ("Confirm it's you"). */
export async function answerDeactivatePage(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  return signedInAction(services, request, form, t, async (signedIn) => {
    switch (form("intent")) {
      case "deactivate":
        return changeStatus(services, signedIn, "deactivate", t);
      case "reactivate":
        return changeStatus(services, signedIn, "reactivate", t);
      case "confirm":
        return confirmWithPassword(services, request, signedIn, form("password"), PATH, t);
    }
    return errorOutcome(400, t("errors:page.nothingToDo"), t("errors:page.noIntent"));
  });
}

async function changeStatus(services: Services, signedIn: SignedIn, change: "deactivate" | "reactivate", t: Translate): Promise<PageOutcome<FormErrors>> {
  // The page showed "Confirm it's you" instead of the button; a form posted anyway (an old tab) is refused.
  if (!signedIn.recentlyAuthenticated) return formErrors("status", { form: t("errors:form.confirmFirst") }, undefined, 403);
  const { did } = signedIn.account;
  if (change === "deactivate") {
    await services.accountStatus.deactivate(did);
    return redirectTo(withNotice(PATH, "account-deactivated"));
  }
  await services.accountStatus.activate(did);
  return redirectTo(withNotice("/account", "account-reactivated"));
}
