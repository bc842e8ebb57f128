import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { ConsentScreen } from "../components/consent/consent-screen";
import { ErrorPage } from "../components/ui/error-page";
import { answerConsentForm, showConsentPage } from "../.server/screens/consent/consent-page";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";

export const meta: MetaFunction = () => [{ title: "Sign in and allow access" }];
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  return respond(showConsentPage(context.services, request));
}

export async function action({ request, context }: ActionFunctionArgs) {
  return respond(answerConsentForm(context.services, request, await formFields(request)));
}

export default function Authorize() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  const formError = actionData?.kind === "form-errors" ? actionData : undefined;
  return <ConsentScreen view={view} formError={formError?.errors.form} identifier={formError?.values?.identifier} />;
}
