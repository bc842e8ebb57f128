import type { ActionFunctionArgs, LoaderFunctionArgs } from "@remix-run/node";
import { jsonError } from "../.server/screens/outcome";
import { accountPasskeyOptions, accountPasskeySignIn } from "../.server/screens/account/passkey-sign-in";
import { screenI18n } from "../.server/i18n/screen-language";
import { readJson, respondJson } from "../.server/screens/respond";

/**
 * Passkey sign-in to the account area (not bound to an authorization
 * request). GET: fresh options. POST JSON {csrf_token, next?, response}:
 * {ok, next} and a session cookie.
 */
export async function loader({ context }: LoaderFunctionArgs) {
  return respondJson(accountPasskeyOptions(context.services));
}

export async function action({ request, context }: ActionFunctionArgs) {
  if (request.method !== "POST") return respondJson(jsonError(405, "invalid_request", "Use POST"));
  const { t } = await screenI18n(context.services, request);
  return respondJson(accountPasskeySignIn(context.services, request, await readJson(request), t));
}
