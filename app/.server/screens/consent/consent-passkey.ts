import { z } from "zod";
import { authenticationResponseSchema } from "../../accounts/passkey-manager.ts";
import { requestClientAddress } from "../../http/browser.ts";
import type { Translate } from "../../i18n/translate.ts";
import type { Services } from "../../services.ts";
import { browserOf, isTrustedPost, startSession } from "../browser-session.ts";
import { jsonError, jsonErrorOf, type JsonOutcome } from "../outcome.ts";

/**
 * Passkey sign-in started on the consent screen. The browser posts only the
 * request_uri (to find the stored request), its CSRF token and the WebAuthn
 * assertion: every OAuth parameter comes from the stored request, and the
 * challenge is bound to it. Success signs the person in; consent stays an
 * explicit click on the screen it returns to.
 */

const passkeyAuthInput = z.object({
  request_uri: z.string().min(1).max(512),
  client_id: z.string().min(1).max(2048),
  csrf_token: z.string().max(256),
  /** "Stay signed in on this device" (docs/decisions/0020). */
  stay_signed_in: z.boolean().optional(),
  response: authenticationResponseSchema,
});

/** GET /oauth/passkey-auth: fresh sign-in options (a new single-use challenge bound to this request), e.g. after a failed attempt. */
export async function consentPasskeyOptions(services: Services, request: Request, t: Translate): Promise<JsonOutcome> {
  const url = new URL(request.url);
  try {
    const pending = await services.authorize.load(url.searchParams.get("client_id"), url.searchParams.get("request_uri"), browserOf(services, request));
    return { status: 200, body: await services.passkeys.authenticationOptions({ requestIdHash: pending.request.idHash }) };
  } catch (error) {
    return jsonErrorOf(error, t);
  }
}

/** POST /oauth/passkey-auth (JSON {request_uri, client_id, csrf_token, response}) → {ok, handle, next} and a session cookie. */
export async function consentPasskeySignIn(services: Services, request: Request, body: unknown, t: Translate): Promise<JsonOutcome> {
  const parsed = passkeyAuthInput.safeParse(body);
  if (!parsed.success) return jsonError(400, "invalid_request", t("errors:passkey.malformed"));
  const input = parsed.data;
  if (!isTrustedPost(services, request, input.csrf_token)) {
    return jsonError(403, "invalid_request", t("errors:json.staleForm"));
  }
  try {
    const pending = await services.authorize.load(input.client_id, input.request_uri, browserOf(services, request));
    const account = await services.signIn.withPasskey(input.response as never, { requestIdHash: pending.request.idHash }, requestClientAddress(request));
    const next = new URL("/oauth/authorize", services.config.issuer);
    next.searchParams.set("client_id", pending.client.clientId);
    next.searchParams.set("request_uri", pending.requestUri);
    // The account just signed in is the one the screen continues with, whoever else is signed in here.
    next.searchParams.set("account", account.did);
    return { status: 200, body: { ok: true, handle: account.handle, next: next.pathname + next.search }, headers: { "Set-Cookie": await startSession(services, request, account, input.stay_signed_in ?? false) } };
  } catch (error) {
    return jsonErrorOf(error, t);
  }
}
