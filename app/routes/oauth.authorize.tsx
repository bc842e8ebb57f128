import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { ConsentScreen } from "../components/consent/consent-screen";
import { verifiedNameText } from "../components/consent/client-identity";
import { consentText } from "../components/consent/text";
import { pageTitle } from "../components/ui/brand";
import { ErrorPage } from "../components/ui/error-page";
import { answerConsentForm, showConsentPage } from "../.server/screens/consent/consent-page";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";

/** The tab says what the page says: the step and the verified app, or the error's own title. */
export const meta: MetaFunction<typeof loader> = ({ data, matches }) => {
  if (!data) return pageTitle(matches, consentText.pageTitle["sign-in"]);
  if (data.kind === "error") return pageTitle(matches, data.title);
  return pageTitle(matches, `${consentText.pageTitle[data.step]}: ${verifiedNameText(data.client)}`);
};
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
