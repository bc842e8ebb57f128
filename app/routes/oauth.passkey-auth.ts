import type { ActionFunctionArgs, LoaderFunctionArgs } from "@remix-run/node";
import { consentPasskeyOptions, consentPasskeySignIn } from "../.server/screens/consent/consent-passkey";
import { jsonError } from "../.server/screens/outcome";
import { readJson, respondJson } from "../.server/screens/respond";

/** Passkey sign-in from the consent screen: GET fresh options, POST the assertion (screens/consent/consent-passkey.ts). */
export async function loader({ request, context }: LoaderFunctionArgs) {
  return respondJson(consentPasskeyOptions(context.services, request));
}

export async function action({ request, context }: ActionFunctionArgs) {
  if (request.method !== "POST") return respondJson(jsonError(405, "invalid_request", "Use POST"));
  return respondJson(consentPasskeySignIn(context.services, request, await readJson(request)));
}
