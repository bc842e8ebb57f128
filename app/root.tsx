import { data, type LinksFunction, type LoaderFunctionArgs, type MetaFunction } from "@remix-run/node";
import { Links, Meta, Outlet, Scripts, ScrollRestoration, isRouteErrorResponse, useRouteError, useRouteLoaderData } from "@remix-run/react";
import { I18nextProvider } from "react-i18next";
import stylesheet from "./tailwind.css?url";
import { brandView } from "./.server/screens/brand";
import { pageResourcesOf } from "./.server/i18n/catalogue";
import { screenI18n } from "./.server/i18n/screen-language";
import { brandOf, pageTitle } from "./components/ui/brand";
import { ErrorPage } from "./components/ui/error-page";
import { metaT, useT, type T } from "./components/ui/i18n";
import { statusTitleKey } from "./components/ui/text";
import { i18nFor } from "./i18n/instance";
import { DEFAULT_LANGUAGE, textDirection, type Language } from "./i18n/languages";

export const links: LinksFunction = () => [
  { rel: "stylesheet", href: stylesheet },
  { rel: "icon", href: "/favicon.svg", type: "image/svg+xml" },
];

/**
 * Every page's frame: the CSP nonce, the brand, and the screen's language (docs/decisions/0019) with its whole
 * catalogue, which the browser hydrates with (no request for translation files). A language just picked with the
 * picker's `lng` is remembered in a cookie set here.
 */
export async function loader({ request, context }: LoaderFunctionArgs) {
  const { language, setCookie } = await screenI18n(context.services, request);
  return data(
    {
      cspNonce: typeof context.cspNonce === "string" ? context.cspNonce : undefined,
      brand: brandView(context.services.config),
      language,
      resources: pageResourcesOf(language, new URL(request.url).pathname),
    },
    setCookie ? { headers: { "Set-Cookie": setCookie } } : undefined,
  );
}

type RootData = { cspNonce?: string; brand?: { stylesheet?: string }; language?: Language; resources?: Record<string, unknown> };

export function Layout({ children }: { children: React.ReactNode }) {
  // useRouteLoaderData also works while the error boundary renders (useLoaderData throws there).
  const data = useRouteLoaderData<typeof loader>("root") as RootData | undefined;
  const nonce = data?.cspNonce;
  const language = data?.language ?? DEFAULT_LANGUAGE;
  const i18n = i18nFor(language, data?.resources ?? {});
  return (
    <html lang={language} dir={textDirection(language)}>
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
        <I18nextProvider i18n={i18n}>{children}</I18nextProvider>
        <ScrollRestoration nonce={nonce} />
        <Scripts nonce={nonce} />
      </body>
    </html>
  );
}

export const meta: MetaFunction<typeof loader> = ({ error, matches }) => {
  if (!error) return [{ title: brandOf(matches).serviceName }];
  const status = isRouteErrorResponse(error) ? error.status : 500;
  return pageTitle(matches, statusTitle(metaT(matches), status));
};

export default function App() {
  return <Outlet />;
}

function statusTitle(t: T, status: number): string {
  return t(statusTitleKey(status));
}

/**
 * Every failure a person can reach ends here when its route has no page of its own. Remix's own refusals (a 405, a
 * 404 of a data request) carry English status texts: the page says it in the screen's language instead.
 */
export function ErrorBoundary() {
  const error = useRouteError();
  const { t } = useT();
  if (isRouteErrorResponse(error)) {
    const message = error.status === 404 ? t("common:errorPage.notFound") : t("common:errorPage.couldNotAnswer");
    return <ErrorPage status={error.status} title={statusTitle(t, error.status)} message={message} />;
  }
  return <ErrorPage status={500} title={statusTitle(t, 500)} message={t("common:errorPage.couldNotShow")} />;
}
