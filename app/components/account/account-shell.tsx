import { useEffect, useRef } from "react";
import type { SignedInBase } from "../../.server/screens/account/views";
import { AreaHeader } from "../ui/area-header";
import { BrandFooter } from "../ui/brand";
import { slots, useT } from "../ui/i18n";
import { ActionNotice } from "../ui/messages";
import { fill } from "../ui/fill";
import { secondaryButton, smallButton } from "../ui/styles";
import { FormAccountProvider, SignedInFormFields } from "./form-account";

/**
 * The account area's pages, in the navigation's order: a page of its own is one line here and its name under
 * account:nav.<key> in every language (issue 28, item 21 added Handle and Deactivate).
 */
export const ACCOUNT_NAV = [
  { href: "/account", key: "overview" },
  { href: "/account/apps", key: "apps" },
  { href: "/account/app-passwords", key: "appPasswords" },
  { href: "/account/sessions", key: "sessions" },
  { href: "/account/passkeys", key: "passkeys" },
  { href: "/account/password", key: "password" },
  { href: "/account/email", key: "email" },
  { href: "/account/handle", key: "handle" },
  { href: "/account/deactivate", key: "deactivate" },
  { href: "/account/delete", key: "delete" },
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
  const { t } = useT();
  const navList = useRef<HTMLUListElement>(null);
  useEffect(() => {
    const list = navList.current;
    const item = list?.querySelector<HTMLElement>('[aria-current="page"]');
    // Sideways only: the page itself does not move.
    if (!list || !item || list.scrollWidth <= list.clientWidth) return;
    const [box, entry] = [list.getBoundingClientRect(), item.getBoundingClientRect()];
    list.scrollLeft += entry.left - box.left - (box.width - entry.width) / 2;
  }, []);
  return (
    <FormAccountProvider did={base.account.did}>
    <div className="flex min-h-screen flex-col">
      <AreaHeader home="/account" area={t("account:account")} skipLabel={t("account:skip")} rowClassName="relative max-w-5xl">
        <AccountMenu base={base} current={current} />
      </AreaHeader>
      <div className="mx-auto flex w-full max-w-5xl flex-1 flex-col gap-6 px-4 py-6 md:flex-row md:gap-10 md:py-10">
        {/*
          On a phone, one row that scrolls sideways (the page's content starts one line below the header, not four);
          from md up, a column beside the page. JavaScript only scrolls the current page's entry into view.
        */}
        <nav aria-label={t("account:navLabel")} className="-mx-4 md:mx-0 md:w-56 md:shrink-0">
          <ul ref={navList} className="flex gap-1 overflow-x-auto px-4 pb-1 md:flex-col md:overflow-visible md:px-0 md:pb-0">
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
          {base.notice ? <ActionNotice>{base.notice}</ActionNotice> : null}
          {children}
        </main>
      </div>
      <BrandFooter className="border-t border-slate-200 px-4 py-4 dark:border-slate-800" />
    </div>
    </FormAccountProvider>
  );
}

/**
 * Which account the pages act on, said in words ("Managing @alice"), and a menu of the accounts signed in on this
 * device: switch to another, add one, sign out of this one or of all (docs/decisions/0020). Plain forms and a
 * <details>: no JavaScript needed.
 */
function AccountMenu({ base, current }: { base: SignedInBase; current: string }) {
  const others = base.accounts.filter((account) => account.did !== base.account.did);
  const { t } = useT();
  return (
    // On a phone the menu spans the header's width (the button may sit anywhere once the header wraps); from sm up
    // it hangs from the button's right edge. Either way it stays in the window (issue 19).
    <details className="min-w-0 sm:relative">
      <summary className={`${secondaryButton} ${smallButton} max-w-full cursor-pointer list-none`}>
        <span className="min-w-0 truncate">{fill(t("account:switcher.managing", slots("handle")), { handle: <strong className="font-semibold">@{base.account.handle}</strong> })}</span>
        <span aria-hidden="true">▾</span>
      </summary>
      <div className="absolute inset-x-4 z-20 mt-2 flex flex-col gap-1 sm:inset-x-auto sm:right-0 sm:w-72 sm:max-w-[calc(100vw-2rem)] rounded-xl border border-slate-200 bg-white p-2 shadow-lg dark:border-slate-700 dark:bg-slate-900">
        <p className="px-2 py-1 text-sm font-semibold text-slate-700 dark:text-slate-200">{t("account:switcher.menu")}</p>
        {others.map((account) => (
          <form key={account.did} method="post" action="/account">
            <input type="hidden" name="csrf_token" value={base.csrfToken} />
            <input type="hidden" name="intent" value="choose" />
            <input type="hidden" name="account" value={account.did} />
            <input type="hidden" name="next" value={current} />
            <button type="submit" className={menuItem}>
              {t("account:switcher.switchTo", { handle: `@${account.handle}` })}
            </button>
          </form>
        ))}
        <a href="/account?add=1" className={menuItem}>
          {t("account:switcher.addAccount")}
        </a>
        <form method="post" action="/account/sign-out">
          <SignedInFormFields csrfToken={base.csrfToken} />
          <button type="submit" className={menuItem}>
            {t("account:switcher.signOutOf", { handle: `@${base.account.handle}` })}
          </button>
        </form>
        {others.length > 0 ? (
          <form method="post" action="/account/sign-out">
            <input type="hidden" name="csrf_token" value={base.csrfToken} />
            <input type="hidden" name="all" value="1" />
            <button type="submit" className={menuItem}>
              {t("account:switcher.signOutAll")}
            </button>
          </form>
        ) : null}
      </div>
    </details>
  );
}

const menuItem = "block w-full min-h-11 rounded-lg px-2 py-2 text-left text-sm font-medium text-slate-900 hover:bg-slate-100 dark:text-slate-100 dark:hover:bg-slate-800";

/** The errors of a form post, if they belong to `form`. */
export function errorsFor(actionData: unknown, form: string): { errors: Record<string, string>; values: Record<string, string> } {
  const data = actionData as { kind?: string; form?: string; errors?: Record<string, string>; values?: Record<string, string> } | undefined;
  if (data?.kind === "form-errors" && data.form === form) return { errors: data.errors ?? {}, values: data.values ?? {} };
  return { errors: {}, values: {} };
}
