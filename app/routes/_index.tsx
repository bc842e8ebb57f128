import type { LoaderFunctionArgs, MetaFunction } from "@remix-run/node";
import { useLoaderData } from "@remix-run/react";
import { BrandFooter, BrandMark, brandOf, useBrand } from "../components/ui/brand";
import { fill } from "../components/ui/fill";
import { metaT, slots, useT } from "../components/ui/i18n";
import { linkStyle, primaryButton } from "../components/ui/styles";

export const meta: MetaFunction = ({ matches }) => {
  const t = metaT(matches);
  return [
    { title: t("common:start.title", { service: brandOf(matches).serviceName }) },
    { name: "description", content: t("common:start.description") },
  ];
};

const CARDS = [
  { href: "/account/apps", key: "apps" },
  { href: "/account/sessions", key: "sessions" },
  { href: "/account/passkeys", key: "passkeys" },
] as const;

export function loader({ context }: LoaderFunctionArgs) {
  const { issuer } = context.services.config;
  return { issuer, host: new URL(issuer).host };
}

export default function Index() {
  const { issuer, host } = useLoaderData<typeof loader>();
  const brand = useBrand();
  const { t } = useT();
  return (
    <div className="mx-auto flex min-h-screen w-full max-w-3xl flex-col gap-8 px-5 py-10 sm:px-8">
      <main id="main" className="flex flex-1 flex-col justify-center gap-8">
        <div className="flex flex-col gap-4">
          <p className="text-sm font-semibold tracking-wide text-slate-700 uppercase dark:text-slate-300">{host}</p>
          <div className="flex items-center gap-3">
            <BrandMark brand={brand} />
            <h1 className="text-3xl font-semibold sm:text-4xl">{brand.serviceName}</h1>
          </div>
          <p className="text-lg text-slate-800 sm:text-xl dark:text-slate-100">{t("common:start.lead")}</p>
          <p className="text-slate-700 dark:text-slate-200">{t("common:start.body")}</p>
          <p>
            <a href="/account" className={primaryButton}>
              {t("common:start.manage")}
            </a>
          </p>
        </div>
        <section aria-labelledby="account-links" className="grid gap-3 sm:grid-cols-3">
          <h2 id="account-links" className="sr-only">
            {t("common:start.inYourAccount")}
          </h2>
          {CARDS.map((item) => (
            <a
              key={item.href}
              href={item.href}
              className="flex flex-col gap-1 rounded-2xl border border-slate-200 bg-white p-4 hover:border-slate-400 dark:border-slate-800 dark:bg-slate-900 dark:hover:border-slate-600"
            >
              <span className="font-semibold text-brand-text dark:text-brand-text-dark">{t(`common:start.cards.${item.key}.title`)}</span>
              <span className="text-sm text-slate-700 dark:text-slate-200">{t(`common:start.cards.${item.key}.text`)}</span>
            </a>
          ))}
        </section>
        <section aria-labelledby="developers" className="flex flex-col gap-2 border-t border-slate-200 pt-6 text-sm dark:border-slate-800">
          <h2 id="developers" className="font-semibold">
            {t("common:start.developers")}
          </h2>
          <p className="text-slate-700 dark:text-slate-200">
            {fill(t("common:start.protocol", slots("link")), {
              link: (
                <a className={`${linkStyle} wrap-break-word`} href="/.well-known/oauth-authorization-server">
                  {issuer}/.well-known/oauth-authorization-server
                </a>
              ),
            })}
          </p>
        </section>
      </main>
      <BrandFooter />
    </div>
  );
}
