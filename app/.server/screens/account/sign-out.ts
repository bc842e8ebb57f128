import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { endSession, isTrustedPost } from "../browser-session.ts";
import { withNotice } from "./notices.ts";
import { forbiddenForm, redirectTo, type PageOutcome } from "../outcome.ts";

/** POST /account/sign-out: ends this browser's session. */
export async function signOut(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<never>> {
  if (!isTrustedPost(services, request, form("csrf_token"))) return forbiddenForm(t);
  const cookie = await endSession(services, request);
  return redirectTo(withNotice("/account", "signed-out"), new Headers({ "Set-Cookie": cookie }));
}
