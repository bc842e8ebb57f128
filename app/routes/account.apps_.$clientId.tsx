import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { AppPage } from "../components/account/app-page";
import { ErrorPage } from "../components/ui/error-page";
import { answerAppPage, showAppPage } from "../.server/screens/account/app-page";
import { screenI18n } from "../.server/i18n/screen-language";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";
import { accountPageTitle } from "../components/account/page-title";

/**
 * One app's page (docs/decisions/0053): /account/apps/<client_id, encoded as one segment>, a stable address. The
 * controller reads the client_id from the raw path (oauth/metadata/server-metadata.ts, clientIdOfAppPage).
 */
export const meta: MetaFunction<typeof loader> = ({ data, matches }) => accountPageTitle(data, matches, "app");
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(showAppPage(context.services, request, t), t);
}

export async function action({ request, context }: ActionFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(answerAppPage(context.services, request, await formFields(request), t), t);
}

export default function ConnectedAppPage() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  return <AppPage view={view} />;
}
