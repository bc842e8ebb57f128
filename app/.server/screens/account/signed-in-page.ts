import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { csrfToken, currentSession, isTrustedPost, selectedAccountDid, signedInAccounts, signInLocation, type SignedIn } from "../browser-session.ts";
import type { BrowserAccount, SignedInBase } from "./views.ts";
import { noticeOf } from "./notices.ts";
import { forbiddenForm, redirectTo, view, type PageOutcome } from "../outcome.ts";

/** The accounts signed in in this browser, as the pages show them. */
export function browserAccounts(accounts: readonly SignedIn[]): BrowserAccount[] {
  return accounts.map(({ account, staySignedIn }) => ({ handle: account.handle, did: account.did, staySignedIn }));
}

/**
 * The frame of every page that needs a signed-in person: a visitor is sent
 * to the sign-in form (and back here afterwards); a browser with several
 * accounts and none chosen yet, to the account chooser; otherwise `build`
 * makes the page's own part of the view, for the chosen account
 * (docs/decisions/0020).
 */
export async function signedInPage<V>(
  services: Services,
  request: Request,
  t: Translate,
  build: (signedIn: SignedIn, base: SignedInBase) => Promise<V>,
): Promise<PageOutcome<V>> {
  const path = new URL(request.url).pathname;
  const accounts = await signedInAccounts(services, request);
  if (accounts.length === 0) return redirectTo(signInLocation(path));
  const selected = selectedAccountDid(services, request, accounts);
  if (!selected && accounts.length > 1) return redirectTo(`/account?${new URLSearchParams({ choose: "1", next: path })}`);
  const signedIn = accounts.find((candidate) => candidate.account.did === selected) ?? accounts[0]!;
  const headers = new Headers();
  const base: SignedInBase = {
    account: { handle: signedIn.account.handle, did: signedIn.account.did },
    accounts: browserAccounts(accounts),
    csrfToken: csrfToken(services, request, headers),
    notice: noticeOf(request, t),
  };
  return view(await build(signedIn, base), headers);
}

/**
 * The frame of every signed-in form post: Origin and CSRF checks, then the
 * account the form was shown for (its hidden `account` field; a form without
 * one acts for the selected account) signed in here.
 */
export async function signedInAction<V>(
  services: Services,
  request: Request,
  form: (name: string) => string,
  t: Translate,
  act: (signedIn: SignedIn) => Promise<PageOutcome<V>>,
): Promise<PageOutcome<V>> {
  if (!isTrustedPost(services, request, form("csrf_token"))) return forbiddenForm(t);
  const signedIn = await currentSession(services, request, form("account") || undefined);
  if (!signedIn) return redirectTo(signInLocation(new URL(request.url).pathname));
  return act(signedIn);
}
