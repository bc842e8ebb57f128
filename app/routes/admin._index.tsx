import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { AdminAccountsPage } from "../components/admin/admin-accounts-page";
import { AdminSignInPage } from "../components/admin/admin-sign-in-page";
import { errorsFor } from "../components/account/account-shell";
import { ErrorPage } from "../components/ui/error-page";
import { pageTitle } from "../components/ui/brand";
import { metaT } from "../components/ui/i18n";
import { answerAdmin, showAdmin } from "../.server/screens/admin/admin-page";
import { screenI18n } from "../.server/i18n/screen-language";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";

/** The operator page, /admin (docs/decisions/0051): its sign-in, and the accounts a page at a time. */
export const meta: MetaFunction<typeof loader> = ({ data, matches }) => {
  const view = data as { kind?: string; title?: string } | undefined;
  if (view?.kind === "error" && view.title) return pageTitle(matches, view.title);
  return pageTitle(matches, metaT(matches)(view?.kind === "admin-accounts" ? "admin:titles.accounts" : "admin:titles.signIn"));
};
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(showAdmin(context.services, request, t), t);
}

export async function action({ request, context }: ActionFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(answerAdmin(context.services, request, await formFields(request), t), t);
}

export default function Admin() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  if (view.kind === "admin-sign-in") return <AdminSignInPage view={view} errors={errorsFor(actionData, "admin-sign-in").errors} />;
  return <AdminAccountsPage view={view} />;
}
