import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { SignUpScreen } from "../components/sign-up/sign-up-screen";
import { ErrorPage } from "../components/ui/error-page";
import { pageTitle } from "../components/ui/brand";
import { metaT } from "../components/ui/i18n";
import { answerAccountSignUp, showAccountSignUp } from "../.server/screens/sign-up/account-sign-up";
import { screenI18n } from "../.server/i18n/screen-language";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";

export const meta: MetaFunction<typeof loader> = ({ data, matches }) => {
  const t = metaT(matches);
  if (data?.kind === "error") return pageTitle(matches, data.title);
  return pageTitle(matches, t("account:titles.signUp"));
};
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(showAccountSignUp(context.services, request), t);
}

export async function action({ request, context }: ActionFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(answerAccountSignUp(context.services, request, await formFields(request), t), t);
}

export default function AccountSignUp() {
  const loaded = useLoaderData<typeof loader>();
  const answered = useActionData<typeof action>();
  const view = answered ?? loaded;
  if (view.kind === "error") return <ErrorPage {...view} />;
  return <SignUpScreen view={view} />;
}
