import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { csrfToken, currentSession, isTrustedPost, signInLocation, type SignedIn } from "../browser-session.ts";
import type { SignedInBase } from "./views.ts";
import { noticeOf } from "./notices.ts";
import { forbiddenForm, redirectTo, view, type PageOutcome } from "../outcome.ts";

/**
 * The frame of every page that needs a signed-in person: a visitor is sent
 * to the sign-in form (and back here afterwards); otherwise `build` makes
 * the page's own part of the view.
 */
export async function signedInPage<V>(
  services: Services,
  request: Request,
  t: Translate,
  build: (signedIn: SignedIn, base: SignedInBase) => Promise<V>,
): Promise<PageOutcome<V>> {
  const signedIn = await currentSession(services, request);
  if (!signedIn) return redirectTo(signInLocation(new URL(request.url).pathname));
  const headers = new Headers();
  const base: SignedInBase = {
    account: { handle: signedIn.account.handle, did: signedIn.account.did },
    csrfToken: csrfToken(services, request, headers),
    notice: noticeOf(request, t),
  };
  return view(await build(signedIn, base), headers);
}

/** The frame of every signed-in form post: Origin and CSRF checks, then a signed-in person. */
export async function signedInAction<V>(
  services: Services,
  request: Request,
  form: (name: string) => string,
  t: Translate,
  act: (signedIn: SignedIn) => Promise<PageOutcome<V>>,
): Promise<PageOutcome<V>> {
  if (!isTrustedPost(services, request, form("csrf_token"))) return forbiddenForm(t);
  const signedIn = await currentSession(services, request);
  if (!signedIn) return redirectTo(signInLocation(new URL(request.url).pathname));
  return act(signedIn);
}
