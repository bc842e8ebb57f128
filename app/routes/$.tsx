import type { MetaFunction } from "@remix-run/node";
import { pageTitle } from "../components/ui/brand";
import { ErrorPage } from "../components/ui/error-page";
import { metaT, useT } from "../components/ui/i18n";

export const meta: MetaFunction = ({ matches }) => pageTitle(matches, metaT(matches)("common:errorPage.statusTitles.404"));

export function loader() {
  throw new Response("There is nothing at this address.", { status: 404 });
}

/** Any other method to an unknown address is a 404 too (not Remix's 405). */
export function action() {
  throw new Response("There is nothing at this address.", { status: 404 });
}

export default function NotFound() {
  const { t } = useT();
  return <ErrorPage status={404} title={t("common:errorPage.statusTitles.404")} message={t("common:errorPage.notFound")} />;
}
