import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { AccountOverview } from "../components/account/overview-page";
import { errorsFor } from "../components/account/account-shell";
import { AccountSignIn } from "../components/account/sign-in-page";
import { AccountChooser } from "../components/account/chooser-page";
import { ErrorPage } from "../components/ui/error-page";
import { answerAccountHome, showAccountHome } from "../.server/screens/account/home-page";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";
import { accountPageTitle } from "../components/account/page-title";

export const meta: MetaFunction<typeof loader> = ({ data, matches }) => accountPageTitle(data, matches, "overview");
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  return respond(showAccountHome(context.services, request));
}

export async function action({ request, context }: ActionFunctionArgs) {
  return respond(answerAccountHome(context.services, request, await formFields(request)));
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
