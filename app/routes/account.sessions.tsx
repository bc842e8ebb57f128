import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { SessionsPage } from "../components/account/sessions-page";
import { ErrorPage } from "../components/ui/error-page";
import { answerSessions, showSessions } from "../.server/screens/account/sessions-page";
import { screenI18n } from "../.server/i18n/screen-language";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";
import { accountPageTitle } from "../components/account/page-title";

export const meta: MetaFunction<typeof loader> = ({ data, matches }) => accountPageTitle(data, matches, "sessions");
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(showSessions(context.services, request, t), t);
}

export async function action({ request, context }: ActionFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(answerSessions(context.services, request, await formFields(request), t), t);
}

export default function Sessions() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  return <SessionsPage view={view} />;
}
