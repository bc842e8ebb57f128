import type { LinksFunction, LoaderFunctionArgs } from "@remix-run/node";
import { Links, Meta, Outlet, Scripts, ScrollRestoration, isRouteErrorResponse, useLoaderData, useRouteError } from "@remix-run/react";
import stylesheet from "./tailwind.css?url";
import { ErrorPage } from "./components/ui/error-page";

export const links: LinksFunction = () => [{ rel: "stylesheet", href: stylesheet }];

export function loader({ context }: LoaderFunctionArgs) {
  return { cspNonce: typeof context.cspNonce === "string" ? context.cspNonce : undefined };
}

export function Layout({ children }: { children: React.ReactNode }) {
  const data = useLoaderData<typeof loader>() as { cspNonce?: string } | undefined;
  const nonce = data?.cspNonce;
  return (
    <html lang="en">
      <head>
        <meta charSet="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="no-referrer" />
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

export default function App() {
  return <Outlet />;
}

export function ErrorBoundary() {
  const error = useRouteError();
  if (isRouteErrorResponse(error)) {
    const message = typeof error.data === "string" ? error.data : error.statusText;
    return <ErrorPage status={error.status} title={error.status === 404 ? "Page not found" : "Something went wrong"} message={message} />;
  }
  return <ErrorPage status={500} title="Something went wrong" message="The server could not show this page. Please try again." />;
}
