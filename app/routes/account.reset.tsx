import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { errorsFor } from "../components/account/account-shell";
import { ResetPage } from "../components/account/recovery-page";
import { accountText } from "../components/account/text";
import { pageTitle } from "../components/ui/brand";
import { ErrorPage } from "../components/ui/error-page";
import { answerReset, showReset } from "../.server/screens/account/recovery-page";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";

export const meta: MetaFunction<typeof loader> = ({ data, matches }) =>
  pageTitle(matches, data?.kind === "error" ? data.title : data?.kind === "reset" ? accountText.recovery.resetTitle : accountText.recovery.invalidTitle);
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  return respond(showReset(context.services, request));
}

export async function action({ request, context }: ActionFunctionArgs) {
  return respond(answerReset(context.services, request, await formFields(request)));
}

export default function Reset() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  return <ResetPage view={view} {...errorsFor(actionData, "reset")} />;
}
