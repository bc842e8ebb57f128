import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { accountReturnPath, csrfToken, currentSession, isTrustedPost, signInWithPassword, withCookies } from "../browser-session.ts";
import type { OverviewView, SignInView } from "./views.ts";
import { noticeOf, withNotice } from "./notices.ts";
import { forbiddenForm, formErrorOf, formErrors, redirectTo, view, type FormErrors, type PageOutcome } from "../outcome.ts";

/** GET /account: the sign-in form for a visitor, the overview for a signed-in person. */
export async function showAccountHome(services: Services, request: Request, t: Translate): Promise<PageOutcome<SignInView | OverviewView>> {
  const headers = new Headers();
  const token = csrfToken(services, request, headers);
  const notice = noticeOf(request, t);
  const signedIn = await currentSession(services, request);
  if (!signedIn) {
    const next = accountReturnPath(new URL(request.url).searchParams.get("next"));
    // A passkey sign-in here is bound to no authorization request.
    const passkey = (await services.passkeys.offerPasskeys()) ? { options: await services.passkeys.authenticationOptions({}) } : undefined;
    return view<SignInView>({ kind: "sign-in", csrfToken: token, next, passkey, notice }, headers);
  }
  const { account } = signedIn;
  const [apps, sessions, passkeys] = await Promise.all([
    services.connectedApps.list(account.did),
    services.sessions.list(account.did),
    services.passkeys.list(account.did),
  ]);
  return view<OverviewView>(
    {
      kind: "overview",
      account: { handle: account.handle, did: account.did },
      email: account.email,
      csrfToken: token,
      notice,
      counts: { apps: apps.length, sessions: sessions.length, passkeys: passkeys.length },
    },
    headers,
  );
}

/** POST /account: password sign-in. */
export async function answerAccountHome(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  if (!isTrustedPost(services, request, form("csrf_token"))) return forbiddenForm(t);
  const identifier = form("identifier").trim();
  const errors: Record<string, string> = {};
  if (!identifier) errors.identifier = t("errors:form.enterIdentifier");
  if (!form("password")) errors.password = t("errors:form.enterPassword");
  if (Object.keys(errors).length) return formErrors("sign-in", errors, { identifier });
  let setCookies: string[];
  try {
    ({ setCookies } = await signInWithPassword(services, request, identifier, form("password")));
  } catch (error) {
    // Never says which part was wrong, so the error belongs to the whole form.
    return formErrorOf(error, t, "sign-in", "form", { identifier });
  }
  const next = accountReturnPath(form("next"));
  return redirectTo(next === "/account" ? withNotice(next, "signed-in") : next, withCookies(new Headers(), setCookies));
}
