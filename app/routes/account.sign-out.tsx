import type { ActionFunctionArgs } from "@remix-run/node";
import { useActionData } from "@remix-run/react";
import { ErrorPage } from "../components/ui/error-page";
import { signOut } from "../.server/account/sign-out";
import { readForm, screenHeaders, toRouteResponse } from "../.server/http/route-response";

export const headers = screenHeaders;

/** Signing out is a POST (with CSRF token); a GET here just goes to the account page. */
export function loader() {
  throw new Response(null, { status: 303, headers: { Location: "/account" } });
}

export async function action({ request, context }: ActionFunctionArgs) {
  return toRouteResponse(await signOut(context.services, request, await readForm(request)));
}

export default function SignOut() {
  const actionData = useActionData<typeof action>();
  return actionData ? <ErrorPage {...actionData} /> : null;
}
