import type { ActionFunctionArgs, LoaderFunctionArgs } from "@remix-run/node";
import { reauthenticateWithPasskey, reauthenticationOptions } from "../.server/account/reauthentication";
import { jsonResponse, readJson } from "../.server/http/route-response";

/**
 * "Confirm it's you" with a passkey (docs/decisions/0007). GET: options bound
 * to this browser session. POST JSON {csrf_token, next, response}: {ok, next}
 * once a passkey of this account signed them.
 */
export async function loader({ request, context }: LoaderFunctionArgs) {
  return jsonResponse(await reauthenticationOptions(context.services, request));
}

export async function action({ request, context }: ActionFunctionArgs) {
  if (request.method !== "POST") return jsonResponse({ status: 405, body: { error: "invalid_request", error_description: "Use POST" } });
  return jsonResponse(await reauthenticateWithPasskey(context.services, request, await readJson(request)));
}
