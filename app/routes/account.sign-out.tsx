import type { ActionFunctionArgs } from "@remix-run/node";
import { useActionData } from "@remix-run/react";
import { ErrorPage } from "../components/ui/error-page";
import { signOut } from "../.server/screens/account/sign-out";
import { screenI18n } from "../.server/i18n/screen-language";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";

export const headers = screenHeaders;

/** Signing out is a POST (with CSRF token); a GET here just goes to the account page. */
export function loader() {
  throw new Response(null, { status: 303, headers: { Location: "/account" } });
}

export async function action({ request, context }: ActionFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(signOut(context.services, request, await formFields(request), t), t);
}

export default function SignOut() {
  const actionData = useActionData<typeof action>();
  return actionData ? <ErrorPage {...actionData} /> : null;
}
