import { z } from "zod";
import { authenticationResponseSchema, type PasskeyBinding } from "../../accounts/passkey-manager.ts";
import { RECENT_AUTHENTICATION_MS } from "../../accounts/recent-authentication.ts";
import { requestClientAddress } from "../../http/browser.ts";
import { hasCode } from "../../errors/atrium-error.ts";
import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { MINUTE } from "../../util/time.ts";
import { currentSession, isTrustedPost, type SignedIn } from "../browser-session.ts";
import type { ConfirmReturnPath, ConfirmView } from "./views.ts";
import { withNotice, type NoticeKey } from "./notices.ts";
import { screenAddress, screenRequestOf, type ScreenRequest } from "../consent/consent-address.ts";
import { type FormErrors, type JsonOutcome, type PageOutcome, formErrorOf, formErrors, jsonErrorOf, redirectTo } from "../outcome.ts";

/**
 * "Confirm it's you" (docs/decisions/0007): a signed-in browser proves the
 * account's password or one of its passkeys again, which refreshes the
 * session's `authenticatedAt`. The password goes through the same throttled
 * sign-in as everywhere else, by the account's DID, so it cannot be guessed
 * at full speed from a stolen session. The passkey's challenge is bound to
 * this browser session, and only a passkey of this account counts.
 */

const WINDOW_MINUTES = RECENT_AUTHENTICATION_MS / MINUTE;

/** The notice each page shows once the person has confirmed. */
const CONFIRMED: Record<ConfirmReturnPath, NoticeKey> = {
  "/account/passkeys": "identity-confirmed",
  "/account/password": "secure-confirmed",
  "/account/email": "email-confirmed",
  "/account/deactivate": "status-confirmed",
  "/account/handle": "status-confirmed",
  "/account/app-passwords": "status-confirmed",
  "/account/identity": "status-confirmed",
};

/** The JSON refusal of an action that needs a recent authentication. */
export function reauthenticationRequired(t: Translate): JsonOutcome {
  return {
    status: 403,
    body: { error: "reauthentication_required", error_description: t("errors:json.reauthenticate", { count: WINDOW_MINUTES }) },
  };
}

/**
 * What the page shows instead of an action that needs a recent authentication. `next` is where a passkey's
 * confirmation returns: one of the account pages, or the consent screen (its address, screens/consent/consent-address.ts).
 */
export async function confirmView(services: Services, signedIn: SignedIn, next: string): Promise<ConfirmView> {
  const passkeyOptions = (await services.passkeys.offerPasskeys(signedIn.account.did))
    ? await services.passkeys.authenticationOptions({ sessionIdHash: signedIn.sessionIdHash })
    : undefined;
  return { next, windowMinutes: WINDOW_MINUTES, passkeyOptions };
}

/**
 * "Confirm it's you" with the password, for a form named `form`: the refusal to show beside the field (or the form),
 * or undefined once the proof is recorded on this browser session.
 */
export async function proveWithPassword(services: Services, signedIn: SignedIn, password: string, t: Translate, form: string): Promise<PageOutcome<FormErrors> | undefined> {
  if (!password) return formErrors(form, { password: t("errors:form.enterPassword") });
  try {
    // This account's password, whatever else the form carried; counted on this browser session's own counter.
    await services.signIn.confirmPassword(signedIn.account.did, password, signedIn.sessionIdHash);
  } catch (error) {
    if (hasCode(error, "sign_in_failed")) return formErrors(form, { password: t("errors:form.passwordWrong") });
    return formErrorOf(error, t, form, "form");
  }
  await services.sessions.markAuthenticated(signedIn.sessionIdHash);
  return undefined;
}

/** POST of the "Confirm it's you" password form (intent=confirm) on `next`'s page. */
export async function confirmWithPassword(
  services: Services,
  request: Request,
  signedIn: SignedIn,
  password: string,
  next: ConfirmReturnPath,
  t: Translate,
): Promise<PageOutcome<FormErrors>> {
  return (await proveWithPassword(services, signedIn, password, t, "confirm")) ?? redirectTo(withNotice(next, CONFIRMED[next]));
}

/** GET /account/reauthenticate: fresh passkey options bound to this browser session. */
export async function reauthenticationOptions(services: Services, request: Request, t: Translate): Promise<JsonOutcome> {
  const signedIn = await currentSession(services, request, new URL(request.url).searchParams.get("account") ?? undefined);
  if (!signedIn) return { status: 401, body: { error: "login_required", error_description: t("errors:json.signInAgain") } };
  return { status: 200, body: await services.passkeys.authenticationOptions({ sessionIdHash: signedIn.sessionIdHash }) };
}

const ACCOUNT_PAGES = ["/account/passkeys", "/account/password", "/account/email", "/account/deactivate", "/account/handle", "/account/app-passwords", "/account/identity"] as const satisfies readonly ConfirmReturnPath[];

/** Where a confirmation returns: an account page, or the consent screen (reactivating in the flow, issue 28 item 17). */
type ConfirmTarget = { page: ConfirmReturnPath } | { screen: ScreenRequest };

const confirmTarget = z
  .string()
  .max(2048)
  .transform((value, context): ConfirmTarget => {
    const page = ACCOUNT_PAGES.find((path) => path === value);
    if (page) return { page };
    // The consent screen's address, rebuilt from its two parameters: never anywhere else.
    const screen = screenRequestOf(value);
    if (screen) return { screen };
    context.addIssue({ code: "custom", message: "not a page that asks to confirm" });
    return z.NEVER;
  });

const reauthenticateInput = z.object({
  csrf_token: z.string().max(256),
  /** The account the page was shown for (docs/decisions/0020); none: the selected one. */
  account: z.string().max(2048).optional(),
  next: confirmTarget.default("/account/passkeys"),
  response: authenticationResponseSchema,
});

/** The account page with its notice, or the consent screen for the account that confirmed. */
function confirmedLocation(target: ConfirmTarget, accountDid: string): string {
  return "page" in target ? withNotice(target.page, CONFIRMED[target.page]) : screenAddress(target.screen, { account: accountDid });
}

/** POST /account/reauthenticate (JSON {csrf_token, next, response}) → {ok, next}. */
export async function reauthenticateWithPasskey(services: Services, request: Request, body: unknown, t: Translate): Promise<JsonOutcome> {
  const parsed = reauthenticateInput.safeParse(body);
  if (!parsed.success) return { status: 400, body: { error: "invalid_request", error_description: t("errors:passkey.malformed") } };
  if (!isTrustedPost(services, request, parsed.data.csrf_token)) {
    return { status: 403, body: { error: "invalid_request", error_description: t("errors:json.staleForm") } };
  }
  const signedIn = await currentSession(services, request, parsed.data.account);
  if (!signedIn) return { status: 401, body: { error: "login_required", error_description: t("errors:json.signInAgain") } };
  // SignIn.withPasskey hands its binding to the passkey manager: the challenge must be the one issued to this session.
  const binding: PasskeyBinding = { sessionIdHash: signedIn.sessionIdHash };
  try {
    const account = await services.signIn.withPasskey(parsed.data.response as never, binding, requestClientAddress(request));
    // Never a sign-in: another account's passkey changes nothing here, and no session is made for it.
    if (account.did !== signedIn.account.did) {
      return {
        status: 403,
        body: { error: "wrong_account", error_description: t("errors:json.wrongAccount", { handle: signedIn.account.handle }) },
      };
    }
  } catch (error) {
    return jsonErrorOf(error, t);
  }
  await services.sessions.markAuthenticated(signedIn.sessionIdHash);
  return { status: 200, body: { ok: true, next: confirmedLocation(parsed.data.next, signedIn.account.did) } };
}
