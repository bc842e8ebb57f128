import type { ActionFunctionArgs, LoaderFunctionArgs } from "@remix-run/node";
import { jsonError } from "../.server/screens/outcome";
import { registerPasskey, registrationOptions } from "../.server/screens/account/passkeys-page";
import { screenI18n } from "../.server/i18n/screen-language";
import { readJson, respondJson } from "../.server/screens/respond";

/**
 * Adding a passkey from /account/passkeys. GET: registration options for the
 * signed-in account. POST JSON {csrf_token, name, response}: stores it.
 */
export async function loader({ request, context }: LoaderFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respondJson(registrationOptions(context.services, request, t));
}

export async function action({ request, context }: ActionFunctionArgs) {
  if (request.method !== "POST") return respondJson(jsonError(405, "invalid_request", "Use POST"));
  const { t } = await screenI18n(context.services, request);
  return respondJson(registerPasskey(context.services, request, await readJson(request), t));
}
