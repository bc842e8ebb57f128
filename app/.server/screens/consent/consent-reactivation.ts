import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import type { PendingAuthorization } from "../../oauth/authorize/authorize-manager.ts";
import { allowingAccount } from "../../oauth/authorize/prompt-rules.ts";
import { signedInAccounts, type SignedIn } from "../browser-session.ts";
import { confirmView, proveWithPassword } from "../account/reauthentication.ts";
import type { ConfirmView } from "../account/views.ts";
import { formErrors, redirectTo, type FormErrors, type PageOutcome } from "../outcome.ts";
import { screenAddress, type ScreenRequest } from "./consent-address.ts";

/**
 * Reactivating a deactivated account inside a sign-in request (issue 28, item 17), as the reference provider does
 * after signing in: the screen says the account is deactivated and offers "Reactivate and continue"; pressing it
 * reactivates the account and returns to this same request's screen (its client_id and request_uri), where Allow is
 * a press of its own. No code is ever issued here. Like the button on /account/deactivate (docs/decisions/0031), it
 * needs this browser to have proved the password or a passkey recently (docs/decisions/0007): a stolen session
 * cookie alone must not put back on the network an account its owner took off. Signing in on this screen counts, so
 * after signing in it is one press; a session from earlier types the password in the same form (or, with
 * JavaScript, confirms with a passkey, which returns here).
 */

/** What the screen shows for a deactivated account: `confirm` when the password (or a passkey) must be proved first. */
export type ReactivationView = { confirm?: ConfirmView };

/** The pushed request a pending authorization is, for the screen's address. */
export function screenRequest(pending: PendingAuthorization): ScreenRequest {
  return { clientId: pending.client.clientId, requestUri: pending.requestUri };
}

export async function reactivationView(services: Services, signedIn: SignedIn, pending: PendingAuthorization): Promise<ReactivationView> {
  if (signedIn.recentlyAuthenticated) return {};
  return { confirm: await confirmView(services, signedIn, screenAddress(screenRequest(pending))) };
}

/**
 * POST /oauth/authorize with decision=reactivate (Origin and CSRF already checked, the request loaded for this
 * browser): the account the screen was shown for, when it may answer this request, is reactivated after a recent
 * proof, and the browser goes back to the request's screen for that account.
 */
export async function reactivateInFlow(
  services: Services,
  request: Request,
  pending: PendingAuthorization,
  form: (name: string) => string,
  t: Translate,
): Promise<PageOutcome<FormErrors>> {
  const signedIn = allowingAccount(pending.request, await signedInAccounts(services, request), form("account"));
  if (!signedIn) return formErrors("consent", { form: t("errors:form.signInToAllow") }, undefined, 400);
  const did = signedIn.account.did;
  const back = (extra: Record<string, string> = {}) => redirectTo<FormErrors>(screenAddress(screenRequest(pending), { account: did, ...extra }));
  // Already active (another tab, a second press): nothing to do but show the request.
  if ((await services.accountStatus.statusOf(did))?.active !== false) return back();
  if (!signedIn.recentlyAuthenticated) {
    const refused = await proveWithPassword(services, signedIn, form("password"), t, "consent");
    if (refused) return refused;
  }
  await services.accountStatus.activate(did);
  return back({ notice: "account-reactivated" });
}
