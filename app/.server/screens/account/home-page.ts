import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { accountReturnPath, csrfToken, currentSession, isTrustedPost, selectAccount, selectedAccountDid, signedInAccounts, signInWithPassword, withCookies } from "../browser-session.ts";
import type { ChooserView, OverviewView, SignInView } from "./views.ts";
import { noticeOf, withNotice } from "./notices.ts";
import { forbiddenForm, formErrorOf, formErrors, redirectTo, view, type FormErrors, type PageOutcome } from "../outcome.ts";
import { browserAccounts } from "./signed-in-page.ts";

/**
 * GET /account: the sign-in form for a visitor (and for "Use another account": `?add=1`), the account chooser
 * when several accounts are signed in here and none is chosen (or `?choose=1`), the overview otherwise
 * (docs/decisions/0020).
 */
export async function showAccountHome(services: Services, request: Request, t: Translate): Promise<PageOutcome<SignInView | ChooserView | OverviewView>> {
  const headers = new Headers();
  const token = csrfToken(services, request, headers);
  const notice = noticeOf(request, t);
  const url = new URL(request.url);
  const next = accountReturnPath(url.searchParams.get("next"));
  const accounts = await signedInAccounts(services, request);
  if (accounts.length === 0 || url.searchParams.get("add") === "1") {
    // A passkey sign-in here is bound to no authorization request.
    const passkey = (await services.passkeys.offerPasskeys()) ? { options: await services.passkeys.authenticationOptions({}) } : undefined;
    return view<SignInView>({ kind: "sign-in", csrfToken: token, next, passkey, notice, accounts: browserAccounts(accounts) }, headers);
  }
  const selected = selectedAccountDid(services, request, accounts);
  if (url.searchParams.get("choose") === "1" || (!selected && accounts.length > 1)) {
    return view<ChooserView>({ kind: "chooser", csrfToken: token, next, accounts: browserAccounts(accounts), notice }, headers);
  }
  const signedIn = (await currentSession(services, request))!;
  const { account } = signedIn;
  const [apps, passwordSessions, sessions, passkeys, status] = await Promise.all([
    services.connectedApps.list(account.did),
    services.passwordSessions.list(account.did),
    services.sessions.list(account.did),
    services.passkeys.list(account.did),
    services.accountStatus.statusOf(account.did),
  ]);
  return view<OverviewView>(
    {
      kind: "overview",
      account: { handle: account.handle, did: account.did },
      accounts: browserAccounts(accounts),
      email: account.email,
      deactivated: status?.active === false,
      csrfToken: token,
      notice,
      // Connected apps lists both kinds: those allowed through OAuth and those signed in with a password (docs/decisions/0047).
      counts: { apps: apps.length + passwordSessions.length, sessions: sessions.length, passkeys: passkeys.length },
    },
    headers,
  );
}

/** POST /account: password sign-in (adding an account when others are signed in here), or choosing an account (intent=choose). */
export async function answerAccountHome(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  if (!isTrustedPost(services, request, form("csrf_token"))) return forbiddenForm(t);
  const next = accountReturnPath(form("next"));
  if (form("intent") === "choose") {
    const cookies = await selectAccount(services, request, form("account"));
    // An account no longer signed in here (signed out in another tab): the chooser again.
    if (!cookies) return redirectTo(`/account?${new URLSearchParams({ choose: "1", next })}`);
    return redirectTo(next, withCookies(new Headers(), cookies));
  }
  const identifier = form("identifier").trim();
  const errors: Record<string, string> = {};
  if (!identifier) errors.identifier = t("errors:form.enterIdentifier");
  if (!form("password")) errors.password = t("errors:form.enterPassword");
  if (Object.keys(errors).length) return formErrors("sign-in", errors, { identifier });
  let setCookies: string[];
  try {
    ({ setCookies } = await signInWithPassword(services, request, identifier, form("password"), form("stay_signed_in") === "on"));
  } catch (error) {
    // Never says which part was wrong, so the error belongs to the whole form.
    return formErrorOf(error, t, "sign-in", "form", { identifier });
  }
  return redirectTo(next === "/account" ? withNotice(next, "signed-in") : next, withCookies(new Headers(), setCookies));
}
