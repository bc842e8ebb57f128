import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { ConnectedAppsPage } from "../components/account/apps-page";
import { ErrorPage } from "../components/ui/error-page";
import { answerConnectedApps, showConnectedApps } from "../.server/screens/account/apps-page";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";
import { accountPageTitle } from "../components/account/page-title";

export const meta: MetaFunction<typeof loader> = ({ data, matches }) => accountPageTitle(data, matches, "apps");
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  return respond(showConnectedApps(context.services, request));
}

export async function action({ request, context }: ActionFunctionArgs) {
  return respond(answerConnectedApps(context.services, request, await formFields(request)));
}

export default function ConnectedApps() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  return <ConnectedAppsPage view={view} />;
}
