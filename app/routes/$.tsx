import { ErrorPage } from "../components/ui/error-page";

export function loader() {
  throw new Response("There is nothing at this address.", { status: 404 });
}

export default function NotFound() {
  return <ErrorPage status={404} title="Page not found" message="There is nothing at this address." />;
}
