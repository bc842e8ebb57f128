import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { errorsFor } from "../components/account/account-shell";
import { PasswordPage } from "../components/account/password-page";
import { ErrorPage } from "../components/ui/error-page";
import { answerPasswordPage, showPasswordPage } from "../.server/screens/account/password-page";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";
import { accountPageTitle } from "../components/account/page-title";

export const meta: MetaFunction<typeof loader> = ({ data, matches }) => accountPageTitle(data, matches, "password");
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  return respond(showPasswordPage(context.services, request));
}

export async function action({ request, context }: ActionFunctionArgs) {
  return respond(answerPasswordPage(context.services, request, await formFields(request)));
}

export default function Password() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  return <PasswordPage view={view} errorsFor={(form) => errorsFor(actionData, form)} />;
}
