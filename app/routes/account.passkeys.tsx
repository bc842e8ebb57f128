import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { errorsFor } from "../components/account/account-shell";
import { PasskeysPage } from "../components/account/passkeys-page";
import { ErrorPage } from "../components/ui/error-page";
import { answerPasskeys, showPasskeys } from "../.server/account/passkeys-page";
import { readForm, screenHeaders, toRouteResponse } from "../.server/http/route-response";

export const meta: MetaFunction = () => [{ title: "Passkeys · Atrium" }];
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  return toRouteResponse(await showPasskeys(context.services, request));
}

export async function action({ request, context }: ActionFunctionArgs) {
  return toRouteResponse(await answerPasskeys(context.services, request, await readForm(request)));
}

export default function Passkeys() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  return <PasskeysPage view={view} errorsFor={(form) => errorsFor(actionData, form)} />;
}
