import type { ActionFunctionArgs, LoaderFunctionArgs } from "@remix-run/node";
import { reauthenticateWithPasskey, reauthenticationOptions } from "../.server/account/reauthentication";
import { jsonResponse, readJson } from "../.server/http/route-response";
import { getServices } from "../.server/services";

/**
 * "Confirm it's you" with a passkey (docs/decisions/0007). GET: options bound
 * to this browser session. POST JSON {csrf_token, next, response}: {ok, next}
 * once a passkey of this account signed them.
 */
export async function loader({ request }: LoaderFunctionArgs) {
  return jsonResponse(await reauthenticationOptions(getServices(), request));
}

export async function action({ request }: ActionFunctionArgs) {
  if (request.method !== "POST") return jsonResponse({ status: 405, body: { error: "invalid_request", error_description: "Use POST" } });
  return jsonResponse(await reauthenticateWithPasskey(getServices(), request, await readJson(request)));
}
