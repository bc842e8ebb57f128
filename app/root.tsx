import type { LinksFunction, LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { Links, Meta, Outlet, Scripts, ScrollRestoration, isRouteErrorResponse, useRouteError, useRouteLoaderData } from "@remix-run/react";
import stylesheet from "./tailwind.css?url";
import { ErrorPage } from "./components/ui/error-page";

export const links: LinksFunction = () => [
  { rel: "stylesheet", href: stylesheet },
  { rel: "icon", href: "/favicon.svg", type: "image/svg+xml" },
];

export function loader({ context }: LoaderFunctionArgs) {
  return { cspNonce: typeof context.cspNonce === "string" ? context.cspNonce : undefined };
}

export function Layout({ children }: { children: React.ReactNode }) {
  // useRouteLoaderData also works while the error boundary renders (useLoaderData throws there).
  const data = useRouteLoaderData<typeof loader>("root") as { cspNonce?: string } | undefined;
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
      </head>
      <body className="min-h-screen bg-slate-50 text-slate-900 antialiased dark:bg-slate-950 dark:text-slate-100">
        {children}
        <ScrollRestoration nonce={nonce} />
        <Scripts nonce={nonce} />
      </body>
    </html>
  );
}

export const meta: MetaFunction = ({ error }) => {
  if (!error) return [{ title: "Atrium" }];
  const status = isRouteErrorResponse(error) ? error.status : 500;
  return [{ title: `${STATUS_TITLES[status] ?? "Something went wrong"} · Atrium` }];
};

export default function App() {
  return <Outlet />;
}

const STATUS_TITLES: Record<number, string> = {
  400: "This request could not be understood",
  403: "This is not allowed",
  404: "Page not found",
  405: "This page cannot do that",
  413: "That was too large",
  429: "Too many requests",
  503: "The server is busy",
};

/** Every failure a person can reach ends here when its route has no page of its own. */
export function ErrorBoundary() {
  const error = useRouteError();
  if (isRouteErrorResponse(error)) {
    const message = typeof error.data === "string" && error.data ? error.data : error.status === 404 ? "There is nothing at this address." : error.statusText || "The server could not answer this request.";
    return <ErrorPage status={error.status} title={STATUS_TITLES[error.status] ?? "Something went wrong"} message={message} />;
  }
  return <ErrorPage status={500} title="Something went wrong" message="The server could not show this page. Please try again." />;
}
