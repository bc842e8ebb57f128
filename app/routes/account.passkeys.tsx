import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { errorsFor } from "../components/account/account-shell";
import { PasskeysPage } from "../components/account/passkeys-page";
import { ErrorPage } from "../components/ui/error-page";
import { answerPasskeys, showPasskeys } from "../.server/screens/account/passkeys-page";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";
import { accountPageTitle } from "../components/account/page-title";

export const meta: MetaFunction<typeof loader> = ({ data, matches }) => accountPageTitle(data, matches, "passkeys");
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  return respond(showPasskeys(context.services, request));
}

export async function action({ request, context }: ActionFunctionArgs) {
  return respond(answerPasskeys(context.services, request, await formFields(request)));
}

export default function Passkeys() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  return <PasskeysPage view={view} errorsFor={(form) => errorsFor(actionData, form)} />;
}
