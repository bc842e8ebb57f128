import type { ActionFunctionArgs, LoaderFunctionArgs } from "@remix-run/node";
import { z } from "zod";
import { authenticationResponseSchema, PasskeyError } from "../.server/accounts/passkey-manager";
import { clientAddress, isSameOriginPost, isValidCsrf } from "../.server/http/browser";
import { AuthorizationPageError } from "../.server/oauth/authorize/authorize-manager";
import { newSessionCookie } from "../.server/oauth/authorize/authorize-page";
import { TooManyRequestsError } from "../.server/oauth/errors/oauth-error";

/**
 * Passkey sign-in started on the consent screen (BRIEF §4). The browser
 * posts only the request_uri (to find the stored request), its CSRF token and
 * the WebAuthn assertion: every OAuth parameter comes from the stored
 * request. Success signs the person in; consent stays an explicit click on
 * the screen it returns to.
 */
const passkeyAuthInput = z.object({
  request_uri: z.string().min(1).max(512),
  client_id: z.string().min(1).max(2048),
  csrf_token: z.string().max(256),
  response: authenticationResponseSchema,
});

function fail(status: number, error: string, description: string, headers?: HeadersInit) {
  return Response.json({ error, error_description: description }, { status, headers: { "Cache-Control": "no-store", ...headers } });
}

export async function action({ request, context }: ActionFunctionArgs) {
  const services = context.services;
  if (request.method !== "POST") return fail(405, "invalid_request", "Use POST");
  if (!(request.headers.get("content-type") ?? "").startsWith("application/json")) return fail(400, "invalid_request", "Send JSON");
  let input: z.infer<typeof passkeyAuthInput>;
  try {
    input = passkeyAuthInput.parse(JSON.parse(await request.text()));
  } catch {
    return fail(400, "invalid_request", "The passkey answer is malformed");
  }
  if (!isSameOriginPost(request, services.config) || !isValidCsrf(request, services.config, services.cookieSecret, input.csrf_token)) {
    return fail(403, "invalid_request", "The page was out of date or did not come from this server; reload it and try again");
  }
  try {
    const pending = await services.authorize.load(input.client_id, input.request_uri);
    const account = await services.signIn.withPasskey(input.response as never, { requestIdHash: pending.request.idHash }, clientAddress(request));
    const cookie = await newSessionCookie(services, request, account.did);
    const next = new URL("/oauth/authorize", services.config.issuer);
    next.searchParams.set("client_id", pending.client.clientId);
    next.searchParams.set("request_uri", pending.requestUri);
    return Response.json({ ok: true, handle: account.handle, next: next.pathname + next.search }, { headers: { "Set-Cookie": cookie, "Cache-Control": "no-store" } });
  } catch (error) {
    if (error instanceof PasskeyError) return fail(400, "passkey_failed", error.message);
    if (error instanceof AuthorizationPageError) return fail(error.status, "invalid_request", `${error.title}. ${error.message}`);
    if (error instanceof TooManyRequestsError) return fail(429, "temporarily_unavailable", error.description, { "Retry-After": String(error.retryAfterSeconds) });
    throw error;
  }
}

/** Fresh sign-in options (a new single-use challenge bound to this request), e.g. after a failed attempt. */
export async function loader({ request, context }: LoaderFunctionArgs) {
  const services = context.services;
  const url = new URL(request.url);
  try {
    const pending = await services.authorize.load(url.searchParams.get("client_id"), url.searchParams.get("request_uri"));
    const options = await services.passkeys.authenticationOptions({ requestIdHash: pending.request.idHash });
    return Response.json(options, { headers: { "Cache-Control": "no-store" } });
  } catch (error) {
    if (error instanceof AuthorizationPageError) return fail(error.status, "invalid_request", `${error.title}. ${error.message}`);
    throw error;
  }
}
