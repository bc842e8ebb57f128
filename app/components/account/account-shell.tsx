import type { SignedInBase } from "../../.server/screens/account/views";
import { BrandFooter, BrandMark, useBrand } from "../ui/brand";
import { useT } from "../ui/i18n";
import { Notice } from "../ui/messages";
import { secondaryButton, smallButton } from "../ui/styles";

export const ACCOUNT_NAV = [
  { href: "/account", key: "overview" },
  { href: "/account/apps", key: "apps" },
  { href: "/account/sessions", key: "sessions" },
  { href: "/account/passkeys", key: "passkeys" },
  { href: "/account/password", key: "password" },
] as const;

type Props = {
  base: SignedInBase;
  /** The page's path, marked as current in the navigation. */
  current: (typeof ACCOUNT_NAV)[number]["href"];
  title: string;
  intro?: React.ReactNode;
  children: React.ReactNode;
};

/** The frame of every signed-in account page: who is signed in, sign out, navigation, the page's title and notice. */
export function AccountShell({ base, current, title, intro, children }: Props) {
  const brand = useBrand();
  const { t } = useT();
  return (
    <div className="flex min-h-screen flex-col">
      <a href="#main" className="sr-only focus:not-sr-only focus:absolute focus:top-2 focus:left-2 focus:z-10 focus:rounded focus:bg-white focus:p-2 dark:focus:bg-slate-900">
        {t("account:skip")}
      </a>
      <header className="border-b border-slate-200 bg-white dark:border-slate-800 dark:bg-slate-900">
        <div className="mx-auto flex w-full max-w-5xl flex-wrap items-center justify-between gap-3 px-4 py-3">
          <a href="/account" className="flex min-w-0 items-center gap-2.5 text-lg font-semibold">
            <BrandMark brand={brand} size="sm" />
            <span className="min-w-0 truncate">
              {brand.serviceName} <span className="font-normal text-slate-600 dark:text-slate-300">{t("account:account")}</span>
            </span>
          </a>
          <div className="flex min-w-0 flex-wrap items-center gap-3">
            <p className="min-w-0 truncate text-sm">
              <span className="sr-only">{t("account:signedInAs")} </span>
              <strong className="font-semibold">@{base.account.handle}</strong>
            </p>
            <form method="post" action="/account/sign-out">
              <input type="hidden" name="csrf_token" value={base.csrfToken} />
              <button type="submit" className={`${secondaryButton} ${smallButton}`}>
                {t("account:signOut")}
              </button>
            </form>
          </div>
        </div>
      </header>
      <div className="mx-auto flex w-full max-w-5xl flex-1 flex-col gap-6 px-4 py-6 md:flex-row md:gap-10 md:py-10">
        <nav aria-label={t("account:navLabel")} className="md:w-56 md:shrink-0">
          <ul className="-mx-1 flex flex-wrap gap-1 md:mx-0 md:flex-col">
            {ACCOUNT_NAV.map((item) => {
              const active = item.href === current;
              return (
                <li key={item.href} className="shrink-0">
                  <a
                    href={item.href}
                    aria-current={active ? "page" : undefined}
                    className={`block rounded-lg px-3 py-2 text-sm font-medium whitespace-nowrap ${
                      active
                        ? "bg-slate-200 text-slate-950 dark:bg-slate-700 dark:text-white"
                        : "text-slate-700 hover:bg-slate-100 dark:text-slate-200 dark:hover:bg-slate-800"
                    }`}
                  >
                    {t(`account:nav.${item.key}`)}
                  </a>
                </li>
              );
            })}
          </ul>
        </nav>
        <main id="main" className="flex min-w-0 flex-1 flex-col gap-5">
          <div className="flex flex-col gap-2">
            <h1 className="text-2xl font-semibold sm:text-3xl">{title}</h1>
            {intro ? <p className="text-slate-700 dark:text-slate-200">{intro}</p> : null}
          </div>
          {base.notice ? <Notice>{base.notice}</Notice> : null}
          {children}
        </main>
      </div>
      <BrandFooter className="border-t border-slate-200 px-4 py-4 dark:border-slate-800" />
    </div>
  );
}

/** The errors of a form post, if they belong to `form`. */
export function errorsFor(actionData: unknown, form: string): { errors: Record<string, string>; values: Record<string, string> } {
  const data = actionData as { kind?: string; form?: string; errors?: Record<string, string>; values?: Record<string, string> } | undefined;
  if (data?.kind === "form-errors" && data.form === form) return { errors: data.errors ?? {}, values: data.values ?? {} };
  return { errors: {}, values: {} };
}
