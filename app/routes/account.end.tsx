import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { errorsFor } from "../components/account/account-shell";
import { EndLinkPage } from "../components/account/end-link-page";
import { pageTitle } from "../components/ui/brand";
import { metaT } from "../components/ui/i18n";
import { ErrorPage } from "../components/ui/error-page";
import { answerEndLink, showEndLink } from "../.server/screens/account/end-link-page";
import { screenI18n } from "../.server/i18n/screen-language";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";

/** docs/decisions/0056: the one-click link of a new-sign-in or new-app email. */
export const meta: MetaFunction<typeof loader> = ({ data, matches }) => pageTitle(matches, data?.kind === "error" ? data.title : metaT(matches)("account:signInNotices.end.title"));
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(showEndLink(context.services, request, t), t);
}

export async function action({ request, context }: ActionFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(answerEndLink(context.services, request, await formFields(request), t), t);
}

export default function EndLink() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  // The POST's own page (the button's result, or a link spent meanwhile) replaces the GET's.
  if (actionData && (actionData.kind === "end-link-done" || actionData.kind === "end-link-gone")) return <EndLinkPage view={actionData} errors={{}} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  return <EndLinkPage view={view} {...errorsFor(actionData, "end")} />;
}
