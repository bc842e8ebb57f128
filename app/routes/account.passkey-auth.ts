import type { ActionFunctionArgs, LoaderFunctionArgs } from "@remix-run/node";
import { accountPasskeyOptions, accountPasskeySignIn } from "../.server/account/passkey-sign-in";
import { jsonResponse, readJson } from "../.server/http/route-response";

/**
 * Passkey sign-in to the account area (not bound to an authorization
 * request). GET: fresh options. POST JSON {csrf_token, next?, response}:
 * {ok, next} and a session cookie.
 */
export async function loader({ context }: LoaderFunctionArgs) {
  return jsonResponse(await accountPasskeyOptions(context.services));
}

export async function action({ request, context }: ActionFunctionArgs) {
  if (request.method !== "POST") return jsonResponse({ status: 405, body: { error: "invalid_request", error_description: "Use POST" } });
  return jsonResponse(await accountPasskeySignIn(context.services, request, await readJson(request)));
}
