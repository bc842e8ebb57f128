import type { MetaFunction } from "@remix-run/node";
import { pageTitle } from "../components/ui/brand";
import { ErrorPage } from "../components/ui/error-page";
import { errorText } from "../components/ui/text";

export const meta: MetaFunction = ({ matches }) => pageTitle(matches, errorText.statusTitles[404]!);

export function loader() {
  throw new Response(errorText.notFound, { status: 404 });
}

/** Any other method to an unknown address is a 404 too (not Remix's 405). */
export function action() {
  throw new Response(errorText.notFound, { status: 404 });
}

export default function NotFound() {
  return <ErrorPage status={404} title={errorText.statusTitles[404]!} message={errorText.notFound} />;
}
