import type { LinksFunction, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { Links, Meta, Outlet, Scripts, ScrollRestoration, isRouteErrorResponse, useRouteError, useRouteLoaderData } from "@remix-run/react";
import stylesheet from "./tailwind.css?url";
import { brandView } from "./.server/screens/brand";
import { brandOf, pageTitle } from "./components/ui/brand";
import { ErrorPage } from "./components/ui/error-page";
import { errorText } from "./components/ui/text";

export const links: LinksFunction = () => [
  { rel: "stylesheet", href: stylesheet },
  { rel: "icon", href: "/favicon.svg", type: "image/svg+xml" },
];

export function loader({ context }: LoaderFunctionArgs) {
  return { cspNonce: typeof context.cspNonce === "string" ? context.cspNonce : undefined, brand: brandView(context.services.config) };
}

export function Layout({ children }: { children: React.ReactNode }) {
  // useRouteLoaderData also works while the error boundary renders (useLoaderData throws there).
  const data = useRouteLoaderData<typeof loader>("root") as { cspNonce?: string; brand?: { stylesheet?: string } } | undefined;
  const nonce = data?.cspNonce;
  return (
    <html lang="en">
      <head>
        <meta charSet="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        {/*
          The server sends Referrer-Policy: no-referrer; this meta replaces it for the page with
          same-origin: other sites (the app's redirect_uri, its links and logo) still get no Referer
          and never see the request_uri, while our own form posts carry their real Origin. Under
          no-referrer, browsers send "Origin: null" on every form post (Fetch §3.1, "append a
          request Origin header"), and the Origin check (docs/architecture.md, "Browser security") refuses them.
        */}
        <meta name="referrer" content="same-origin" />
        <Meta />
        <Links />
        {/* The operator's primary colour (docs/decisions/0018): a stylesheet of this server, since the CSP allows no inline style. */}
        {data?.brand?.stylesheet ? <link rel="stylesheet" href={data.brand.stylesheet} /> : null}
      </head>
      <body className="min-h-screen bg-slate-50 text-slate-900 antialiased dark:bg-slate-950 dark:text-slate-100">
        {children}
        <ScrollRestoration nonce={nonce} />
        <Scripts nonce={nonce} />
      </body>
    </html>
  );
}

export const meta: MetaFunction<typeof loader> = ({ error, matches }) => {
  if (!error) return [{ title: brandOf(matches).serviceName }];
  const status = isRouteErrorResponse(error) ? error.status : 500;
  return pageTitle(matches, statusTitle(status));
};

export default function App() {
  return <Outlet />;
}

function statusTitle(status: number): string {
  return errorText.statusTitles[status] ?? errorText.statusTitles.other;
}

/** Every failure a person can reach ends here when its route has no page of its own. */
export function ErrorBoundary() {
  const error = useRouteError();
  if (isRouteErrorResponse(error)) {
    const message = typeof error.data === "string" && error.data ? error.data : error.status === 404 ? errorText.notFound : error.statusText || errorText.couldNotAnswer;
    return <ErrorPage status={error.status} title={statusTitle(error.status)} message={message} />;
  }
  return <ErrorPage status={500} title={statusTitle(500)} message={errorText.couldNotShow} />;
}
