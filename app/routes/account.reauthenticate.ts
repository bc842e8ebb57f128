import type { ActionFunctionArgs, LoaderFunctionArgs } from "@remix-run/node";
import { jsonError } from "../.server/screens/outcome";
import { reauthenticateWithPasskey, reauthenticationOptions } from "../.server/screens/account/reauthentication";
import { screenI18n } from "../.server/i18n/screen-language";
import { readJson, respondJson } from "../.server/screens/respond";

/**
 * "Confirm it's you" with a passkey (docs/decisions/0007). GET: options bound
 * to this browser session. POST JSON {csrf_token, next, response}: {ok, next}
 * once a passkey of this account signed them.
 */
export async function loader({ request, context }: LoaderFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respondJson(reauthenticationOptions(context.services, request, t));
}

export async function action({ request, context }: ActionFunctionArgs) {
  if (request.method !== "POST") return respondJson(jsonError(405, "invalid_request", "Use POST"));
  const { t } = await screenI18n(context.services, request);
  return respondJson(reauthenticateWithPasskey(context.services, request, await readJson(request), t));
}
