import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { AdminAccountPage } from "../components/admin/admin-account-page";
import { errorsFor } from "../components/account/account-shell";
import { ErrorPage } from "../components/ui/error-page";
import { pageTitle } from "../components/ui/brand";
import { metaT } from "../components/ui/i18n";
import { answerAdminAccount, showAdminAccount } from "../.server/screens/admin/admin-page";
import { screenI18n } from "../.server/i18n/screen-language";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";

/** One account on the operator page (docs/decisions/0051): what is known of it, its takedown or restoration. */
export const meta: MetaFunction<typeof loader> = ({ data, matches }) => {
  const view = data as { kind?: string; title?: string; account?: { handle: string } } | undefined;
  if (view?.kind === "error" && view.title) return pageTitle(matches, view.title);
  return pageTitle(matches, metaT(matches)("admin:titles.account", { handle: view?.account?.handle ?? "" }));
};
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(showAdminAccount(context.services, request, t), t);
}

export async function action({ request, context }: ActionFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(answerAdminAccount(context.services, request, await formFields(request), t), t);
}

export default function AdminAccount() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  const { errors, values } = errorsFor(actionData, "admin-status");
  return <AdminAccountPage view={view} errors={errors} values={values} />;
}
