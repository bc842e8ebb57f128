import { AreaHeader } from "../ui/area-header";
import { BrandFooter } from "../ui/brand";
import { useT } from "../ui/i18n";
import { Notice } from "../ui/messages";
import { secondaryButton, smallButton } from "../ui/styles";

type Props = {
  title: string;
  intro?: React.ReactNode;
  notice?: string;
  /** The CSRF token of the sign-out form; none: not signed in (the sign-in form). */
  signOutToken?: string;
  children: React.ReactNode;
};

/**
 * The frame of the operator page (docs/decisions/0051), in the account pages' look: the brand and "Operator" in the
 * header with the sign-out button, then the page's title, introduction and notice. No JavaScript needed.
 */
export function AdminShell({ title, intro, notice, signOutToken, children }: Props) {
  const { t } = useT();
  return (
    <div className="flex min-h-screen flex-col">
      <AreaHeader home="/admin" area={t("admin:operator")} skipLabel={t("admin:skip")} rowClassName="max-w-6xl">
        {signOutToken ? (
          <form method="post" action="/admin">
            <input type="hidden" name="csrf_token" value={signOutToken} />
            <input type="hidden" name="intent" value="sign_out" />
            <button type="submit" className={`${secondaryButton} ${smallButton}`}>
              {t("admin:signOut")}
            </button>
          </form>
        ) : null}
      </AreaHeader>
      <main id="main" className="mx-auto flex w-full max-w-6xl flex-1 flex-col gap-5 px-4 py-6 md:py-10">
        <div className="flex flex-col gap-2">
          <h1 className="text-2xl font-semibold break-words sm:text-3xl">{title}</h1>
          {intro ? <p className="text-slate-700 dark:text-slate-200">{intro}</p> : null}
        </div>
        {notice ? <Notice>{notice}</Notice> : null}
        {children}
      </main>
      <BrandFooter className="border-t border-slate-200 px-4 py-4 dark:border-slate-800" />
    </div>
  );
}

/** An account's status as a small label: green when active, amber when deactivated, red when taken down. */
export function StatusBadge({ status }: { status: "active" | "deactivated" | "takendown" }) {
  const { t } = useT();
  const colours = {
    active: "bg-emerald-100 text-emerald-900 dark:bg-emerald-950 dark:text-emerald-100",
    deactivated: "bg-amber-100 text-amber-950 dark:bg-amber-950 dark:text-amber-50",
    takendown: "bg-red-100 text-red-900 dark:bg-red-950 dark:text-red-100",
  }[status];
  return <span className={`inline-block rounded-full px-2 py-0.5 text-xs font-semibold whitespace-nowrap ${colours}`}>{t(`admin:status.${status}`)}</span>;
}
