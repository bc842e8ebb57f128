import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { errorsFor } from "../components/account/account-shell";
import { IdentityPage } from "../components/account/identity-page";
import { accountPageTitle } from "../components/account/page-title";
import { ErrorPage } from "../components/ui/error-page";
import { answerIdentityPage, showIdentityPage } from "../.server/screens/account/identity-page";
import { screenI18n } from "../.server/i18n/screen-language";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";

export const meta: MetaFunction<typeof loader> = ({ data, matches }) => accountPageTitle(data, matches, "identity");
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(showIdentityPage(context.services, request, t), t);
}

export async function action({ request, context }: ActionFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(answerIdentityPage(context.services, request, await formFields(request), t), t);
}

export default function Identity() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  return <IdentityPage view={view} errorsFor={(form) => errorsFor(actionData, form)} />;
}
