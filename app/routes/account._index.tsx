import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { AccountOverview } from "../components/account/overview-page";
import { errorsFor } from "../components/account/account-shell";
import { AccountSignIn } from "../components/account/sign-in-page";
import { AccountChooser } from "../components/account/chooser-page";
import { ErrorPage } from "../components/ui/error-page";
import { answerAccountHome, showAccountHome } from "../.server/screens/account/home-page";
import { screenI18n } from "../.server/i18n/screen-language";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";
import { accountPageTitle } from "../components/account/page-title";

export const meta: MetaFunction<typeof loader> = ({ data, matches }) => accountPageTitle(data, matches, "overview");
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(showAccountHome(context.services, request, t), t);
}

export async function action({ request, context }: ActionFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(answerAccountHome(context.services, request, await formFields(request), t), t);
}

export default function AccountHome() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  if (view.kind === "overview") return <AccountOverview view={view} />;
  if (view.kind === "chooser") return <AccountChooser view={view} />;
  const { errors, values } = errorsFor(actionData, "sign-in");
  return <AccountSignIn view={view} errors={errors} values={values} />;
}
