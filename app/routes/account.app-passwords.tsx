import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { errorsFor } from "../components/account/account-shell";
import { AppPasswordsPage } from "../components/account/app-passwords-page";
import { accountPageTitle } from "../components/account/page-title";
import { ErrorPage } from "../components/ui/error-page";
import { answerAppPasswords, showAppPasswords } from "../.server/screens/account/app-passwords-page";
import { screenI18n } from "../.server/i18n/screen-language";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";

export const meta: MetaFunction<typeof loader> = ({ data, matches }) => accountPageTitle(data, matches, "appPasswords");
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(showAppPasswords(context.services, request, t), t);
}

export async function action({ request, context }: ActionFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(answerAppPasswords(context.services, request, await formFields(request), t), t);
}

export default function AppPasswords() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  const created = actionData?.kind === "app-password-created" ? actionData : undefined;
  return <AppPasswordsPage view={view} created={created} errorsFor={(form) => errorsFor(actionData, form)} />;
}
