import type { ActionFunctionArgs, LoaderFunctionArgs } from "@remix-run/node";
import { consentPasskeyOptions, consentPasskeySignIn } from "../.server/screens/consent/consent-passkey";
import { jsonError } from "../.server/screens/outcome";
import { screenI18n } from "../.server/i18n/screen-language";
import { readJson, respondJson } from "../.server/screens/respond";

/** Passkey sign-in from the consent screen: GET fresh options, POST the assertion (screens/consent/consent-passkey.ts). */
export async function loader({ request, context }: LoaderFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respondJson(consentPasskeyOptions(context.services, request, t));
}

export async function action({ request, context }: ActionFunctionArgs) {
  if (request.method !== "POST") return respondJson(jsonError(405, "invalid_request", "Use POST"));
  const { t } = await screenI18n(context.services, request);
  return respondJson(consentPasskeySignIn(context.services, request, await readJson(request), t));
}
