import type { ActionFunctionArgs, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useActionData, useLoaderData } from "@remix-run/react";
import { errorsFor } from "../components/account/account-shell";
import { RecoverPage } from "../components/account/recovery-page";
import { pageTitle } from "../components/ui/brand";
import { metaT } from "../components/ui/i18n";
import { ErrorPage } from "../components/ui/error-page";
import { answerRecovery, showRecovery } from "../.server/screens/account/recovery-page";
import { screenI18n } from "../.server/i18n/screen-language";
import { formFields, respond, screenHeaders } from "../.server/screens/respond";

export const meta: MetaFunction<typeof loader> = ({ data, matches }) =>
  pageTitle(
    matches,
    data?.kind === "error"
      ? data.title
      : data?.kind === "recover" && data.sent
        ? metaT(matches)("account:recovery.sentTitle")
        : data?.kind === "recover" && data.codeForm
          ? metaT(matches)("account:recovery.codeHeading")
          : metaT(matches)("account:recovery.title"),
  );
export const headers = screenHeaders;

export async function loader({ request, context }: LoaderFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(showRecovery(context.services, request), t);
}

export async function action({ request, context }: ActionFunctionArgs) {
  const { t } = await screenI18n(context.services, request);
  return respond(answerRecovery(context.services, request, await formFields(request), t), t);
}

export default function Recover() {
  const view = useLoaderData<typeof loader>();
  const actionData = useActionData<typeof action>();
  if (actionData?.kind === "error") return <ErrorPage {...actionData} />;
  if (view.kind === "error") return <ErrorPage {...view} />;
  return <RecoverPage view={view} {...errorsFor(actionData, "recover")} code={errorsFor(actionData, "recover-code")} />;
}
