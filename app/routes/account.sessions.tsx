import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { SessionsPage } from "../components/account/sessions-page";
import { ErrorPage } from "../components/ui/error-page";
import { answerSessions, showSessions } from "../.server/account/sessions-page";
import { readForm, screenHeaders, toRouteResponse } from "../.server/http/route-response";

export const meta: MetaFunction = () => [{ title: "Signed-in browsers · Atrium" }];
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  return toRouteResponse(await showSessions(context.services, request));
}

export async function action({ request, context }: ActionFunctionArgs) {
  return toRouteResponse(await answerSessions(context.services, request, await readForm(request)));
}

export default function Sessions() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  return <SessionsPage view={view} />;
}
