import { hasCode } from "../../errors/atrium-error.ts";
import type { Translate } from "../../i18n/translate.ts";
import type { LinkState } from "../../notices/sign-in-notices.ts";

/** A link that names something (its state read as live, used or expired). */
type KnownLink = Exclude<LinkState, { state: "unknown" }>;
import type { Services } from "../../services.ts";
import { csrfToken, currentSession, endSession, isTrustedPost, signInWithPassword, withCookies } from "../browser-session.ts";
import { forbiddenForm, formErrorOf, formErrors, redirectTo, view, type FormErrors, type PageOutcome } from "../outcome.ts";
import { proveWithPassword } from "./reauthentication.ts";
import { knownDeviceId } from "../../http/browser.ts";
import { sha256Base64url } from "../../util/crypto.ts";
import { describeUserAgent } from "./user-agent.ts";

/**
 * /account/end?token=…: the one-click link of a new-sign-in or new-app email (docs/decisions/0056). The GET only shows
 * what the link would end (mail scanners open links); the person proves to be the account's, as the account area
 * asks (a sign-in here, or "Confirm it's you" within its window: docs/decisions/0007), and one POST ends it through
 * the existing revocations: the browser session deleted, or the app's access revoked with all its tokens.
 */

/** What the page shows: the link's state, and for a live link the one step left before the button. */
export type EndLinkView =
  | { kind: "end-link-gone"; reason: "used" | "expired" | "unknown" }
  | { kind: "end-link-done"; what: "browser" | "app" }
  | {
      kind: "end-link";
      csrfToken: string;
      token: string;
      handle: string;
      accountDid: string;
      what: "browser" | "app";
      /** The browser ("Firefox on Android") or the app, as the email named it. */
      name: string;
      sentAt: string;
      /** Sign in as the account here, confirm it's you, or press the button. */
      step: "sign-in" | "confirm" | "end";
    };

const PATH = "/account/end";

function tokenOf(request: Request): string {
  return (new URL(request.url).searchParams.get("token") ?? "").slice(0, 200);
}

function pageOf(token: string): string {
  return `${PATH}?${new URLSearchParams({ token })}`;
}

/** A link that no longer works: 410 when it did once (used, expired), 404 when it never named anything here. */
function gone(reason: "used" | "expired" | "unknown", headers = new Headers()): PageOutcome<EndLinkView> {
  return view<EndLinkView>({ kind: "end-link-gone", reason }, headers, reason === "unknown" ? 404 : 410);
}

/** GET: what the link ends, for whom, and what the visitor must do first. Changes nothing. */
export async function showEndLink(services: Services, request: Request, t: Translate): Promise<PageOutcome<EndLinkView>> {
  const token = tokenOf(request);
  const link = await services.signInNotices.link(token);
  if (link.state !== "live") return gone(link.state);
  const headers = new Headers();
  const signedIn = await currentSession(services, request, link.accountDid);
  const step = !signedIn ? "sign-in" : signedIn.recentlyAuthenticated ? "end" : "confirm";
  return view<EndLinkView>(
    {
      kind: "end-link",
      csrfToken: csrfToken(services, request, headers),
      token,
      handle: link.handle,
      accountDid: link.accountDid,
      what: link.target.kind,
      name: link.target.kind === "browser" ? describeUserAgent(link.label || null, t) : link.label,
      sentAt: new Date(link.sentAt).toISOString(),
      step,
    },
    headers,
  );
}

/** POST: sign in as the link's account, confirm it's you, or end what the link names. */
export async function answerEndLink(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<EndLinkView | FormErrors>> {
  if (!isTrustedPost(services, request, form("csrf_token"))) return forbiddenForm(t);
  const token = form("token").slice(0, 200);
  const link = await services.signInNotices.link(token);
  if (link.state !== "live") return gone(link.state);
  switch (form("intent")) {
    case "sign_in":
      return signIn(services, request, token, link, form("password"), t);
    case "confirm": {
      const signedIn = await currentSession(services, request, link.accountDid);
      if (!signedIn) return redirectTo(pageOf(token));
      return (await proveWithPassword(services, signedIn, form("password"), t, "end")) ?? redirectTo(pageOf(token));
    }
    case "end":
      return end(services, request, token, link);
  }
  return redirectTo(pageOf(token));
}

/** Signs in as the link's account (by its DID: nobody else's password signs in here), then back to the page. */
async function signIn(services: Services, request: Request, token: string, link: KnownLink, password: string, t: Translate): Promise<PageOutcome<FormErrors>> {
  if (!password) return formErrors("end", { password: t("errors:form.enterPassword") });
  try {
    const { setCookies } = await signInWithPassword(services, request, link.accountDid, password);
    return redirectTo(pageOf(token), withCookies(new Headers(), setCookies));
  } catch (error) {
    if (hasCode(error, "sign_in_failed")) return formErrors("end", { password: t("errors:form.passwordWrong") });
    return formErrorOf(error, t, "end", "password");
  }
}

/** The button: only for the link's account, proven within the window; a link spent meanwhile ends nothing more. */
async function end(services: Services, request: Request, token: string, link: KnownLink): Promise<PageOutcome<EndLinkView>> {
  const signedIn = await currentSession(services, request, link.accountDid);
  if (!signedIn?.recentlyAuthenticated) return redirectTo(pageOf(token));
  const result = await services.signInNotices.end(token, link, signedIn.account.did);
  if (result !== "ended") return gone(result === "live" ? "unknown" : result);
  // The browser it named may be this one: its cookies go too.
  const here = knownDeviceId(request, services.config, services.cookieSecret, link.accountDid);
  const isThisBrowser = link.target.kind === "browser" && here !== undefined && sha256Base64url(here) === link.target.deviceHash;
  const headers = isThisBrowser ? withCookies(new Headers(), await endSession(services, request, link.accountDid)) : new Headers();
  return view<EndLinkView>({ kind: "end-link-done", what: link.target.kind }, headers);
}
