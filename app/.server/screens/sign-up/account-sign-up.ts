import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { SignUpClosedError } from "../../accounts/sign-up.ts";
import { csrfToken, isTrustedPost } from "../browser-session.ts";
import { forbiddenForm, view, type PageOutcome } from "../outcome.ts";
import { withNotice } from "../account/notices.ts";
import { answerSignUp, firstStepValues, signedUp, signUpView, type SignUpFrame, type SignUpView } from "./sign-up-page.ts";

const PATH = "/account/sign-up";

/** The sign-up form in the account area: after it, the new account's overview (docs/decisions/0052). */
const ACCOUNT_FRAME: SignUpFrame = {
  action: PATH,
  hidden: {},
  signInHref: "/account",
  handleStepHref: ({ name, domain }) => `${PATH}?${new URLSearchParams({ name, domain })}`,
};

/** GET /account/sign-up: the first step (or again, with what was typed: "Change" on the last). */
export async function showAccountSignUp(services: Services, request: Request): Promise<PageOutcome<SignUpView>> {
  if (!services.signUp.enabled) throw new SignUpClosedError();
  const headers = new Headers();
  const token = csrfToken(services, request, headers);
  return view(signUpView(services, ACCOUNT_FRAME, token, { step: "handle", values: firstStepValues(new URL(request.url)) }), headers);
}

/** POST /account/sign-up: either step (Origin and CSRF checked first). */
export async function answerAccountSignUp(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<SignUpView>> {
  if (!isTrustedPost(services, request, form("csrf_token"))) return forbiddenForm(t);
  const token = csrfToken(services, request, new Headers());
  return answerSignUp(services, request, form, t, ACCOUNT_FRAME, token, (account) => signedUp(services, request, account, withNotice("/account", "signed-up")));
}
