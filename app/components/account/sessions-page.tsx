import { SignedInFormFields } from "./form-account";
import type { SessionsView } from "../../.server/screens/account/views";
import { DateTime } from "../ui/date-time";
import { useT } from "../ui/i18n";
import { ListFilter, useListFilter } from "../ui/list-filter";
import { Identifier } from "../ui/identifier";
import { dangerButton, secondaryButton, smallButton } from "../ui/styles";
import { AccountShell } from "./account-shell";
import { CheckboxField } from "../ui/checkbox-field";

/** /account/sessions: the browsers signed in to this account. */
export function SessionsPage({ view }: { view: SessionsView }) {
  const others = view.sessions.filter((session) => !session.current).length;
  const { t } = useT();
  // A long list gets a filter: by the browser and system, the address, the full user agent.
  const filter = useListFilter(view.sessions, (session) => [session.device, session.ipAddress ?? "", session.userAgent ?? ""].join(" "));
  return (
    <AccountShell base={view} current="/account/sessions" title={t("account:titles.sessions")} intro={t("account:sessions.intro")}>
      <ListFilter id="sessions-filter" label={t("account:filter.sessions")} filter={filter} total={view.sessions.length} />
      <ul className="flex flex-col gap-3">
        {filter.shown.map((session) => (
          <li key={session.id} className="flex flex-col gap-3 rounded-2xl border border-slate-200 bg-white p-5 sm:flex-row sm:items-start sm:justify-between dark:border-slate-800 dark:bg-slate-900">
            <div className="flex min-w-0 flex-col gap-1">
              <h2 id={`session-${session.id}`} className="font-semibold">
                {session.device}
                {session.current ? (
                  // One piece: the pill moves to the next line whole rather than breaking inside (issue 28, item 21).
                  <span className="ml-2 inline-block rounded-full bg-emerald-100 px-2 py-0.5 text-xs font-semibold whitespace-nowrap text-emerald-900 dark:bg-emerald-950 dark:text-emerald-100">
                    {t("account:sessions.thisBrowser")}
                  </span>
                ) : null}
              </h2>
              <dl className="grid grid-cols-[auto_1fr] gap-x-3 gap-y-0.5 text-sm">
                <dt className="text-slate-600 dark:text-slate-300">{t("account:sessions.lastSeen")}</dt>
                <dd>
                  <DateTime iso={session.lastSeenAt} />
                </dd>
                <dt className="text-slate-600 dark:text-slate-300">{t("account:sessions.signedIn")}</dt>
                <dd>
                  <DateTime iso={session.createdAt} />
                </dd>
                <dt className="text-slate-600 dark:text-slate-300">{t("account:sessions.ipAddress")}</dt>
                <dd className="font-mono">{session.ipAddress ? <Identifier text={session.ipAddress} /> : t("account:sessions.unknown")}</dd>
              </dl>
              {session.userAgent ? <p className="font-mono text-xs break-all text-slate-600 dark:text-slate-300">{session.userAgent}</p> : null}
            </div>
            <form method="post" className="shrink-0">
              <SignedInFormFields csrfToken={view.csrfToken} />
              <input type="hidden" name="intent" value="sign_out" />
              <input type="hidden" name="session_id" value={session.id} />
              <button type="submit" className={`${secondaryButton} ${smallButton}`} aria-describedby={`session-${session.id}`}>
                {t("account:sessions.signOut")}
              </button>
            </form>
          </li>
        ))}
      </ul>
      {others > 0 ? (
        <form method="post">
          <SignedInFormFields csrfToken={view.csrfToken} />
          <input type="hidden" name="intent" value="sign_out_others" />
          <button type="submit" className={dangerButton}>
            {t("account:sessions.signOutOthers", { count: others })}
          </button>
        </form>
      ) : (
        <p className="text-slate-700 dark:text-slate-200">{t("account:sessions.noOthers")}</p>
      )}
      <SignInNotices view={view} />
    </AccountShell>
  );
}

/** "Email me when a new browser or app signs in" (docs/decisions/0056): a checkbox and Save, a plain form. */
function SignInNotices({ view }: { view: SessionsView }) {
  const { t } = useT();
  const { available, on, email } = view.signInNotices;
  return (
    <section aria-labelledby="sign-in-notices-heading" className="flex flex-col gap-3 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
      <h2 id="sign-in-notices-heading" className="text-lg font-semibold">
        {t("account:signInNotices.title")}
      </h2>
      {available ? (
        <form method="post" className="flex flex-col gap-3">
          <SignedInFormFields csrfToken={view.csrfToken} />
          <input type="hidden" name="intent" value="sign_in_notices" />
          <CheckboxField id="sign-in-notices" name="on" label={t("account:signInNotices.label")} hint={t("account:signInNotices.explain", { email })} defaultChecked={on} />
          <button type="submit" className={`${secondaryButton} self-start`}>
            {t("account:signInNotices.save")}
          </button>
        </form>
      ) : (
        <p className="text-slate-700 dark:text-slate-200">{t("account:signInNotices.unavailable")}</p>
      )}
    </section>
  );
}
