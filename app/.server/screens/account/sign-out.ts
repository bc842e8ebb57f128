import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { currentSession, endSession, isTrustedPost, withCookies } from "../browser-session.ts";
import { withNotice } from "./notices.ts";
import { forbiddenForm, redirectTo, type PageOutcome } from "../outcome.ts";

/**
 * POST /account/sign-out: signs one account out of this browser (the form's `account`, else the selected one),
 * or every account (`all=1`); the other accounts stay signed in (docs/decisions/0020).
 */
export async function signOut(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<never>> {
  if (!isTrustedPost(services, request, form("csrf_token"))) return forbiddenForm(t);
  if (form("all") === "1") {
    return redirectTo(withNotice("/account", "signed-out-all"), withCookies(new Headers(), await endSession(services, request)));
  }
  const signedIn = await currentSession(services, request, form("account") || undefined);
  const cookies = signedIn ? await endSession(services, request, signedIn.account.did) : [];
  return redirectTo(withNotice("/account", "signed-out"), withCookies(new Headers(), cookies));
}
