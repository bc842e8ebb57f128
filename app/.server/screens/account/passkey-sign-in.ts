import { z } from "zod";
import { authenticationResponseSchema } from "../../accounts/passkey-manager.ts";
import { requestClientAddress } from "../../http/browser.ts";
import { type JsonOutcome, jsonErrorOf } from "../outcome.ts";
import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { accountReturnPath, isTrustedPost, startSession } from "../browser-session.ts";
import { withNotice } from "./notices.ts";

/**
 * Passkey sign-in to the account area: like the consent screen's, but the
 * challenge is bound to no authorization request.
 */

/** GET /account/passkey-auth: fresh sign-in options (a new single-use challenge). */
export async function accountPasskeyOptions(services: Services): Promise<JsonOutcome> {
  return { status: 200, body: await services.passkeys.authenticationOptions({}) };
}

const signInInput = z.object({
  csrf_token: z.string().max(256),
  next: z.string().max(256).optional(),
  /** "Stay signed in on this device" (docs/decisions/0020). */
  stay_signed_in: z.boolean().optional(),
  response: authenticationResponseSchema,
});

/** POST /account/passkey-auth (JSON {csrf_token, next?, response}) → {ok, next} and a session cookie. */
export async function accountPasskeySignIn(services: Services, request: Request, body: unknown, t: Translate): Promise<JsonOutcome> {
  const parsed = signInInput.safeParse(body);
  if (!parsed.success) return { status: 400, body: { error: "invalid_request", error_description: t("errors:passkey.malformed") } };
  if (!isTrustedPost(services, request, parsed.data.csrf_token)) {
    return { status: 403, body: { error: "invalid_request", error_description: t("errors:json.staleForm") } };
  }
  try {
    const account = await services.signIn.withPasskey(parsed.data.response as never, {}, requestClientAddress(request));
    const cookie = await startSession(services, request, account, parsed.data.stay_signed_in ?? false);
    const next = accountReturnPath(parsed.data.next);
    return {
      status: 200,
      body: { ok: true, handle: account.handle, next: next === "/account" ? withNotice(next, "signed-in") : next },
      headers: { "Set-Cookie": cookie },
    };
  } catch (error) {
    return jsonErrorOf(error, t);
  }
}
