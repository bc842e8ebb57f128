import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from "../../accounts/password.ts";
import { hasCode } from "../../errors/atrium-error.ts";
import type { Translate } from "../../i18n/translate.ts";
import { languageOf } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { cookieNames, readCookie, requestClientAddress, serializeCookie } from "../../http/browser.ts";
import { csrfToken, endSession, isTrustedPost, withCookies } from "../browser-session.ts";
import { forbiddenForm, formErrorOf, formErrors, redirectTo, view, type FormErrors, type PageOutcome } from "../outcome.ts";
import { withNotice } from "./notices.ts";
import { screenAddress, screenRequestOf } from "../consent/consent-address.ts";
import type { RecoverView, ResetView } from "./views.ts";

/**
 * "Forgot password?" (docs/decisions/0020): /account/recover asks for a link by email (the same answer whatever
 * the identifier names), /account/reset?code=… sets a new password with it. Without SMTP the first page says how to
 * reach the operator, who can still run `npm run account -- set-password`.
 */

/**
 * The way back to a sign-in request (issue 19): "Forgot password?" on the consent screen opens
 * /account/recover?return=<that screen's address>. Only the consent screen's own address is accepted, rebuilt from
 * its two parameters (screens/consent/consent-address.ts), so the parameter can send nobody anywhere else.
 */
function signInScreen(value: string | null | undefined): string | undefined {
  const request = screenRequestOf(value);
  return request ? screenAddress(request) : undefined;
}

/** Where this browser goes after a reset it asked for from a sign-in request: a cookie, for the reset link opened here. */
function returnCookieName(services: Services): string {
  return cookieNames(services.config).recoveryReturn;
}

/**
 * What this browser typed when it asked for an email, to fill in the code form after the redirect (docs/decisions/0030):
 * a cookie rather than the address, so that an email address stays out of the URL, the history and the logs.
 */
function identifierCookieName(services: Services): string {
  return `${services.config.publicUrl.protocol === "https:" ? "__Host-" : ""}atrium_recovery_identifier`;
}

/** GET /account/recover; with ?sent=1 "Check your email" and the code form, with ?code=1 the code form alone. */
export async function showRecovery(services: Services, request: Request): Promise<PageOutcome<RecoverView>> {
  const headers = new Headers();
  const { config, recovery } = services;
  const url = new URL(request.url);
  const sent = url.searchParams.get("sent") === "1";
  return view<RecoverView>(
    {
      kind: "recover",
      csrfToken: csrfToken(services, request, headers),
      available: recovery.available,
      sent,
      codeForm: sent || url.searchParams.get("code") === "1",
      identifier: (readCookie(request, identifierCookieName(services)) ?? "").slice(0, 256),
      minutes: Math.round(config.lifetimes.recoveryCode / 60_000),
      supportUrl: config.brand.supportUrl,
      serviceName: config.brand.serviceName,
      returnTo: signInScreen(url.searchParams.get("return")),
    },
    headers,
  );
}

/** POST /account/recover: always the same redirect (or a wait), whether or not an account matched; or a typed code. */
export async function answerRecovery(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  if (!isTrustedPost(services, request, form("csrf_token"))) return forbiddenForm(t);
  if (form("intent") === "code") return answerTypedCode(services, request, form, t);
  const identifier = form("identifier").trim();
  if (!identifier) return formErrors("recover", { identifier: t("errors:form.enterIdentifier") });
  if (!services.recovery.available) return redirectTo("/account/recover");
  try {
    // The email is written in the language of the page that asked for it.
    await services.recovery.request(identifier, requestClientAddress(request), languageOf(t));
  } catch (error) {
    return formErrorOf(error, t, "recover", "form", { identifier });
  }
  const returnTo = signInScreen(form("return"));
  const lifetimeSeconds = Math.round(services.config.lifetimes.recoveryCode / 1000);
  const headers = new Headers({ "Set-Cookie": serializeCookie(services.config, identifierCookieName(services), identifier.slice(0, 256), lifetimeSeconds) });
  if (!returnTo) return redirectTo("/account/recover?sent=1", headers);
  // The reset link may be opened in this browser (the cookie takes it back to the request) or on another device
  // (the page that says "check your email" links back to the request, and takes the code).
  headers.append("Set-Cookie", serializeCookie(services.config, returnCookieName(services), returnTo, lifetimeSeconds));
  return redirectTo(`/account/recover?${new URLSearchParams({ sent: "1", return: returnTo })}`, headers);
}

/**
 * POST /account/recover with intent=code: "Enter the code from the email" (docs/decisions/0030). A right code leads to
 * the new-password page of a fresh link, as the emailed link does; anything else gets one sentence under the code.
 */
async function answerTypedCode(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  const identifier = form("identifier").trim();
  const code = form("code").trim();
  const values = { identifier, code };
  if (!identifier) return formErrors("recover-code", { identifier: t("errors:form.enterIdentifier") }, values);
  if (!code) return formErrors("recover-code", { code: t("errors:form.enterCode") }, values);
  if (!services.recovery.available) return redirectTo("/account/recover");
  try {
    const link = await services.recovery.exchangeTypedCode(identifier, code, requestClientAddress(request));
    const url = new URL(link);
    // The identifier was kept only to fill in this form: on a shared computer it should not wait for the next person.
    const headers = new Headers({ "Set-Cookie": serializeCookie(services.config, identifierCookieName(services), "", 0) });
    return redirectTo(`${url.pathname}${url.search}`, headers);
  } catch (error) {
    return formErrorOf(error, t, "recover-code", "code", { identifier, code: "" });
  }
}

/** GET /account/reset?code=…: the form while the link works. Opening it spends nothing (mail scanners open links). */
export async function showReset(services: Services, request: Request): Promise<PageOutcome<ResetView>> {
  const headers = new Headers();
  const code = new URL(request.url).searchParams.get("code") ?? "";
  const did = await services.recovery.accountOf(code);
  const account = did ? await services.accounts.findByDid(did) : undefined;
  if (!account) return view<ResetView>({ kind: "reset-invalid" }, headers);
  // The page names the account it resets (issue 19): the link's reader may hold several.
  return view<ResetView>({ kind: "reset", csrfToken: csrfToken(services, request, headers), code, minLength: PASSWORD_MIN_LENGTH, handle: account.handle }, headers);
}

/** POST /account/reset: the new password, twice, and what else to remove; spends the link. */
export async function answerReset(services: Services, request: Request, form: (name: string) => string, t: Translate): Promise<PageOutcome<FormErrors>> {
  if (!isTrustedPost(services, request, form("csrf_token"))) return forbiddenForm(t);
  const password = form("new_password");
  const errors: Record<string, string> = {};
  if (password.length < PASSWORD_MIN_LENGTH) errors.new_password = t("errors:form.passwordTooShort", { count: PASSWORD_MIN_LENGTH });
  else if (password.length > PASSWORD_MAX_LENGTH) errors.new_password = t("errors:form.passwordTooLong");
  else if (form("confirm_password") !== password) errors.confirm_password = t("errors:form.passwordMismatch");
  if (Object.keys(errors).length) return formErrors("reset", errors);
  let accountDid: string;
  try {
    ({ accountDid } = await services.recovery.reset(
      form("code"),
      password,
      { removePasskeys: form("remove_passkeys") === "on", disconnectApps: form("disconnect_apps") === "on" },
      requestClientAddress(request),
    ));
  } catch (error) {
    // Under `link`, not `form`: the page then says the link no longer works and offers a new one.
    if (hasCode(error, "recovery_code_invalid")) return formErrors("reset", { link: t("errors:recovery.invalidLink") });
    return formErrorOf(error, t, "reset", "form", undefined, ["new_password"]);
  }
  // Every session of the account ended with the reset; this browser's other accounts stay signed in.
  const headers = withCookies(new Headers(), await endSession(services, request, accountDid));
  // Asked for from a sign-in request in this browser: back to that request, to sign in with the new password.
  // The screen says the password changed (issue 28, item 21), as the account page does.
  const returnTo = screenRequestOf(readCookie(request, returnCookieName(services)));
  if (returnTo) {
    headers.append("Set-Cookie", serializeCookie(services.config, returnCookieName(services), "", 0));
    return redirectTo(screenAddress(returnTo, { notice: "password-reset" }), headers);
  }
  return redirectTo(withNotice("/account", "password-reset"), headers);
}
