import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { ConsentScreen } from "../components/consent/consent-screen";
import { verifiedNameText } from "../components/consent/client-identity";
import { pageTitle } from "../components/ui/brand";
import { metaT } from "../components/ui/i18n";
import { ErrorPage } from "../components/ui/error-page";
import { answerConsentForm, showConsentPage } from "../.server/screens/consent/consent-page";
import { screenI18n } from "../.server/i18n/screen-language";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";

/** The tab says what the page says: the step and the verified app, or the error's own title. */
export const meta: MetaFunction<typeof loader> = ({ data, matches }) => {
  const t = metaT(matches);
  if (!data) return pageTitle(matches, t("consent:pageTitle.sign-in"));
  if (data.kind === "error") return pageTitle(matches, data.title);
  return pageTitle(matches, t("consent:tabTitle", { step: t(`consent:pageTitle.${data.step}`), who: verifiedNameText(t, data.client) }));
};
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(showConsentPage(context.services, request, t), t);
}

export async function action({ request, context }: ActionFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(answerConsentForm(context.services, request, await formFields(request), t), t);
}

export default function Authorize() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  const formError = actionData?.kind === "form-errors" ? actionData : undefined;
  return <ConsentScreen view={view} formError={formError?.errors.form} identifier={formError?.values?.identifier} passwordError={view.reactivation ? formError?.errors.password : undefined} />;
}
