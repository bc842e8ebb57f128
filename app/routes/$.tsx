import type { MetaFunction } from "@remix-run/node";
import { ErrorPage } from "../components/ui/error-page";

export const meta: MetaFunction = () => [{ title: "Page not found · Atrium" }];

export function loader() {
  throw new Response("There is nothing at this address.", { status: 404 });
}

/** Any other method to an unknown address is a 404 too (not Remix's 405). */
export function action() {
  throw new Response("There is nothing at this address.", { status: 404 });
}

export default function NotFound() {
  return <ErrorPage status={404} title="Page not found" message="There is nothing at this address." />;
}
