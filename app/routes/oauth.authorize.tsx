import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { lazy, Suspense } from "react";
import type { SignUpView } from "../.server/screens/sign-up/sign-up-page";
import { ConsentScreen } from "../components/consent/consent-screen";
import { verifiedNameText } from "../components/consent/client-identity";
import { pageTitle } from "../components/ui/brand";
import { metaT } from "../components/ui/i18n";
import { ErrorPage } from "../components/ui/error-page";
import { answerConsentForm, showConsentPage } from "../.server/screens/consent/consent-page";
import { screenI18n } from "../.server/i18n/screen-language";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";

/**
 * The sign-up form (docs/decisions/0052) is loaded only by the pages that show it, so that the consent screen's
 * JavaScript stays within its budget (docs/testing.md). The server renders every page whole before sending it
 * (screens/stream-page.ts waits for all of it), so the form is in the HTML without JavaScript too.
 */
const LazySignUpScreen = lazy(() => import("../components/sign-up/sign-up-screen").then((module) => ({ default: module.SignUpScreen })));

function SignUpScreen({ view }: { view: SignUpView }) {
  return (
    <Suspense fallback={null}>
      <LazySignUpScreen view={view} />
    </Suspense>
  );
}

/** The tab says what the page says: the step and the verified app, or the error's own title. */
export const meta: MetaFunction<typeof loader> = ({ data, matches }) => {
  const t = metaT(matches);
  if (!data) return pageTitle(matches, t("consent:pageTitle.sign-in"));
  if (data.kind === "error") return pageTitle(matches, data.title);
  if (data.kind === "sign-up") return pageTitle(matches, data.client ? t("consent:tabTitle", { step: t("consent:pageTitle.sign-up"), who: verifiedNameText(t, data.client) }) : t("consent:pageTitle.sign-up"));
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
  // The sign-up form's answers are its next view (its last step, or its refusals beside their fields).
  if (actionData?.kind === "sign-up") return <SignUpScreen view={actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  if (view.kind === "sign-up") return <SignUpScreen view={view} />;
  const formError = actionData?.kind === "form-errors" ? actionData : undefined;
  return <ConsentScreen view={view} formError={formError?.errors.form} identifier={formError?.values?.identifier} passwordError={view.reactivation ? formError?.errors.password : undefined} />;
}
