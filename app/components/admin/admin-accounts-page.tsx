import type { AdminAccountsView, OperatorAccount } from "../../.server/screens/admin/admin-views";
import { DateTime } from "../ui/date-time";
import { useT } from "../ui/i18n";
import { inputStyle, linkStyle, mutedText, secondaryButton } from "../ui/styles";
import { AdminShell, StatusBadge } from "./admin-shell";

/** Accounts per page: the server's ADMIN_PAGE_SIZE (app/.server/screens/admin/admin-page.ts). */
const PAGE_SIZE = 50;

/**
 * /admin: the accounts a page at a time (docs/decisions/0051), found by the start of a handle, an email or a DID. A
 * phone gets one card per account, a wider screen a table; each account links to its own page, where it is taken down
 * or restored.
 */
export function AdminAccountsPage({ view }: { view: AdminAccountsView }) {
  const { t } = useT();
  return (
    <AdminShell title={t("admin:titles.accounts")} intro={t("admin:list.intro", { count: PAGE_SIZE })} notice={view.notice} signOutToken={view.csrfToken}>
      <form method="get" action="/admin" role="search" className="flex flex-col gap-2 sm:max-w-xl">
        <label htmlFor="q" className="font-medium">
          {t("admin:list.searchLabel")}
        </label>
        <div className="flex gap-2">
          <input id="q" name="q" type="search" defaultValue={view.query} aria-describedby="q-hint" autoComplete="off" spellCheck={false} className={inputStyle} />
          <button type="submit" className={secondaryButton}>
            {t("admin:list.searchSubmit")}
          </button>
        </div>
        <p id="q-hint" className={`text-sm ${mutedText}`}>
          {t("admin:list.searchHint")}
        </p>
        {view.query ? (
          <a href="/admin" className={`${linkStyle} self-start text-sm`}>
            {t("admin:list.showAll")}
          </a>
        ) : null}
      </form>
      {view.accounts.length === 0 ? (
        <p className="text-slate-700 dark:text-slate-200">{t("admin:list.none")}</p>
      ) : (
        <section aria-labelledby="results" className="flex flex-col gap-3">
          <h2 id="results" className="sr-only">
            {t("admin:list.results")}
          </h2>
          <AccountCards accounts={view.accounts} />
          <AccountTable accounts={view.accounts} />
        </section>
      )}
      {view.nextHref || view.firstHref ? (
        <nav aria-label={t("admin:list.pages")} className="flex flex-wrap gap-3">
          {view.firstHref ? (
            <a href={view.firstHref} className={secondaryButton}>
              {t("admin:list.first")}
            </a>
          ) : null}
          {view.nextHref ? (
            <a href={view.nextHref} className={secondaryButton}>
              {t("admin:list.next")}
            </a>
          ) : null}
        </nav>
      ) : null}
    </AdminShell>
  );
}

function manageHref(account: OperatorAccount): string {
  return `/admin/account?${new URLSearchParams({ did: account.did })}`;
}

function EmailState({ account }: { account: OperatorAccount }) {
  const { t } = useT();
  return <span className={`text-sm ${mutedText}`}>{account.emailConfirmed ? t("admin:email.confirmed") : t("admin:email.unconfirmed")}</span>;
}

function LastSignIn({ account }: { account: OperatorAccount }) {
  const { t } = useT();
  return account.lastSignInAt ? <DateTime iso={account.lastSignInAt} /> : <>{t("admin:never")}</>;
}

/** A phone's list: one card per account. */
function AccountCards({ accounts }: { accounts: readonly OperatorAccount[] }) {
  const { t } = useT();
  return (
    <ul className="flex flex-col gap-3 md:hidden">
      {accounts.map((account) => (
        <li key={account.did} className="flex flex-col gap-2 rounded-2xl border border-slate-200 bg-white p-4 dark:border-slate-800 dark:bg-slate-900">
          <div className="flex flex-wrap items-center justify-between gap-2">
            <a href={manageHref(account)} className={`${linkStyle} min-w-0 font-semibold break-all`} aria-label={t("admin:list.open", { handle: account.handle })}>
              @{account.handle}
            </a>
            <StatusBadge status={account.status} />
          </div>
          <dl className="grid grid-cols-[auto_1fr] gap-x-3 gap-y-1 text-sm">
            <dt className={mutedText}>{t("admin:list.email")}</dt>
            {/* The address may break anywhere (it has no spaces); whether it is confirmed, on its own line, never. */}
            <dd className="min-w-0">
              <div className="break-all">{account.email}</div>
              <EmailState account={account} />
            </dd>
            <dt className={mutedText}>{t("admin:list.created")}</dt>
            <dd>
              <DateTime iso={account.createdAt} />
            </dd>
            <dt className={mutedText}>{t("admin:list.lastSignIn")}</dt>
            <dd>
              <LastSignIn account={account} />
            </dd>
          </dl>
        </li>
      ))}
    </ul>
  );
}

/** A wider screen's list: a table. */
function AccountTable({ accounts }: { accounts: readonly OperatorAccount[] }) {
  const { t } = useT();
  const header = "px-3 py-2 text-left text-sm font-semibold";
  const cell = "px-3 py-2 align-top text-sm";
  return (
    <div className="hidden overflow-x-auto rounded-2xl border border-slate-200 bg-white md:block dark:border-slate-800 dark:bg-slate-900">
      <table className="w-full border-collapse">
        <thead className="border-b border-slate-200 dark:border-slate-800">
          <tr>
            <th scope="col" className={header}>
              {t("admin:titles.accounts")}
            </th>
            <th scope="col" className={header}>
              {t("admin:list.email")}
            </th>
            <th scope="col" className={header}>
              {t("admin:list.status")}
            </th>
            <th scope="col" className={header}>
              {t("admin:list.created")}
            </th>
            <th scope="col" className={header}>
              {t("admin:list.lastSignIn")}
            </th>
          </tr>
        </thead>
        <tbody>
          {accounts.map((account) => (
            <tr key={account.did} className="border-b border-slate-100 last:border-0 dark:border-slate-800">
              <th scope="row" className={`${cell} text-left font-normal`}>
                <a href={manageHref(account)} className={`${linkStyle} font-semibold break-all`} aria-label={t("admin:list.open", { handle: account.handle })}>
                  @{account.handle}
                </a>
                <div className={`font-mono text-xs break-all ${mutedText}`}>{account.did}</div>
              </th>
              <td className={cell}>
                <div className="break-all">{account.email}</div>
                <EmailState account={account} />
              </td>
              <td className={cell}>
                <StatusBadge status={account.status} />
              </td>
              <td className={`${cell} whitespace-nowrap`}>
                <DateTime iso={account.createdAt} />
              </td>
              <td className={`${cell} whitespace-nowrap`}>
                <LastSignIn account={account} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
