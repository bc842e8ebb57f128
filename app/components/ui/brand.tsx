import { useRouteLoaderData } from "@remix-run/react";
import type { BrandView } from "../../.server/screens/brand";
import { metaT, useT } from "./i18n";
import { LanguagePicker } from "./language-picker";
import { LogoImage } from "./logo-image";

/**
 * The operator's brand on every screen (docs/decisions/0018): read from the root loader, which every page has
 * (its error pages too).
 */

export function useBrand(): BrandView {
  const data = useRouteLoaderData("root") as { brand?: BrandView } | undefined;
  const { t } = useT();
  return data?.brand ?? { serviceName: t("common:brand.fallbackName") };
}

/** The brand of a route's `matches` (meta functions cannot use hooks). */
export function brandOf(matches: readonly { id: string; data?: unknown }[]): BrandView {
  const root = matches.find((match) => match.id === "root")?.data as { brand?: BrandView } | undefined;
  return root?.brand ?? { serviceName: metaT(matches)("common:brand.fallbackName") };
}

/** A tab title: "<page> · <service>". */
export function pageTitle(matches: readonly { id: string; data?: unknown }[], page: string): { title: string }[] {
  return [{ title: metaT(matches)("common:brand.pageTitle", { page, service: brandOf(matches).serviceName }) }];
}

/**
 * The operator's logo, or a neutral mark in the primary colour when none is set or it does not load. Decorative: the
 * name stands beside it.
 */
export function BrandMark({ brand, size = "md" }: { brand: BrandView; size?: "sm" | "md" }) {
  const box = size === "sm" ? "size-7" : "size-9";
  if (brand.logoUrl) {
    return <LogoImage src={brand.logoUrl} size={36} className={`${box} shrink-0 rounded-lg object-contain`} fallback={<NeutralMark box={box} />} />;
  }
  return <NeutralMark box={box} />;
}

function NeutralMark({ box }: { box: string }) {
  return (
    <svg aria-hidden="true" viewBox="0 0 32 32" className={`${box} shrink-0`}>
      <rect width="32" height="32" rx="8" className="fill-brand" />
      <path d="M9 23V14.5a7 7 0 0 1 14 0V23" fill="none" strokeWidth="2.5" strokeLinecap="round" className="stroke-on-brand" />
      <path d="M13 23v-6h6v6" fill="none" strokeWidth="2.5" strokeLinejoin="round" className="stroke-on-brand" />
    </svg>
  );
}

/** The header of the standalone screens (consent, sign-in, errors, start page): the mark and the service name, home. */
export function BrandHeader({ className = "" }: { className?: string }) {
  const brand = useBrand();
  const { t } = useT();
  return (
    <header className={`flex items-center gap-3 ${className}`}>
      <a href="/" className="flex min-w-0 items-center gap-2.5 rounded-lg">
        <BrandMark brand={brand} />
        <span className="flex min-w-0 flex-col leading-tight">
          <span className="truncate font-semibold text-slate-900 dark:text-slate-50">{brand.serviceName}</span>
          <span className="text-xs text-slate-600 dark:text-slate-300">{t("common:brand.tagline")}</span>
        </span>
      </a>
    </header>
  );
}

/** The footer of every screen: the operator's terms, privacy and support links (when set), and the language picker. */
export function BrandFooter({ className = "" }: { className?: string }) {
  const brand = useBrand();
  const { t } = useT();
  const links = [
    { href: brand.termsUrl, label: t("common:brand.terms") },
    { href: brand.privacyUrl, label: t("common:brand.privacy") },
    { href: brand.supportUrl, label: t("common:brand.support") },
  ].filter((link): link is { href: string; label: string } => Boolean(link.href));
  return (
    <footer className={`flex flex-col gap-3 text-sm ${className}`}>
      {links.length ? (
      <nav aria-label={t("common:brand.footerLabel", { service: brand.serviceName })}>
        <ul className="flex flex-wrap justify-center gap-x-5 gap-y-1">
          {links.map((link) => (
            <li key={link.label}>
              <a href={link.href} className="text-slate-700 underline underline-offset-2 hover:decoration-2 dark:text-slate-200" target="_blank" rel="noopener noreferrer">
                {link.label}
                <span className="sr-only"> {t("common:brand.newTab")}</span>
              </a>
            </li>
          ))}
        </ul>
      </nav>
      ) : null}
      <LanguagePicker />
    </footer>
  );
}
