import type { ActionFunctionArgs, LoaderFunctionArgs } from "@remix-run/node";
import { registerPasskey, registrationOptions } from "../.server/account/passkeys-page";
import { jsonResponse, readJson } from "../.server/http/route-response";

/**
 * Adding a passkey from /account/passkeys. GET: registration options for the
 * signed-in account. POST JSON {csrf_token, name, response}: stores it.
 */
export async function loader({ request, context }: LoaderFunctionArgs) {
  return jsonResponse(await registrationOptions(context.services, request));
}

export async function action({ request, context }: ActionFunctionArgs) {
  if (request.method !== "POST") return jsonResponse({ status: 405, body: { error: "invalid_request", error_description: "Use POST" } });
  return jsonResponse(await registerPasskey(context.services, request, await readJson(request)));
}
