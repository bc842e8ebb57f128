import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { AppPasswordPage } from "../components/account/app-password-page";
import { accountPageTitle } from "../components/account/page-title";
import { ErrorPage } from "../components/ui/error-page";
import { answerAppPasswordPage, showAppPasswordPage } from "../.server/screens/account/app-password-page";
import { screenI18n } from "../.server/i18n/screen-language";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";

/** One app password's page (docs/decisions/0053): /account/app-passwords/<id>, a stable address while it exists. */
export const meta: MetaFunction<typeof loader> = ({ data, matches }) => accountPageTitle(data, matches, "appPassword");
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(showAppPasswordPage(context.services, request, t), t);
}

export async function action({ request, context }: ActionFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(answerAppPasswordPage(context.services, request, await formFields(request), t), t);
}

export default function AppPasswordDetails() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  return <AppPasswordPage view={view} />;
}
