import { ConfirmForm } from "./form-account";
import type { AppsView, ConnectedAppView, PasswordSessionView } from "../../.server/screens/account/views";
import { ClaimedIdentity, IdentityCaution, VerifiedName, verifiedNameText } from "../consent/client-identity";
import { ScopeList } from "../consent/scope-list";
import { PermissionGroupsView } from "../consent/permission-groups";
import { DateTime } from "../ui/date-time";
import { ListFilter, useListFilter } from "../ui/list-filter";
import { useT } from "../ui/i18n";
import { dangerButton, linkStyle, smallButton, summaryStyle } from "../ui/styles";
import { AccountShell } from "./account-shell";

/** /account/apps: every app with access, what it may do, and Revoke; after Revoke, its confirmation first. */
export function ConnectedAppsPage({ view }: { view: AppsView }) {
  const { t } = useT();
  // A long list gets a filter: by the verified host or "an app on this device", the app's own name, its client_id.
  const filter = useListFilter(view.apps, (app) => [verifiedNameText(t, app), app.name ?? "", app.clientId].join(" "));
  if (view.revoking) return <ConfirmRevoke view={view} app={view.revoking} />;
  if (view.signingOut) return <ConfirmSignOut view={view} session={view.signingOut} />;
  return (
    <AccountShell base={view} current="/account/apps" title={t("account:titles.apps")} intro={t("account:apps.intro")}>
      {view.apps.length === 0 && view.passwordSessions.length === 0 ? (
        <p className="rounded-2xl border border-dashed border-slate-300 p-6 text-slate-700 dark:border-slate-700 dark:text-slate-200">
          {t("account:apps.none")}
        </p>
      ) : (
        <>
          <ListFilter id="apps-filter" label={t("account:filter.apps")} filter={filter} total={view.apps.length} />
          <ul className="flex flex-col gap-4">
            {filter.shown.map((app) => (
              <li key={app.clientId}>
                <ConnectedApp app={app} index={view.apps.indexOf(app)} />
              </li>
            ))}
          </ul>
        </>
      )}
      {view.passwordSessions.length > 0 ? <PasswordSessions view={view} /> : null}
    </AccountShell>
  );
}

/** Apps signed in with the account's password or an app password (docs/decisions/0047), each with Sign out. */
function PasswordSessions({ view }: { view: AppsView }) {
  const { t } = useT();
  return (
    <section aria-labelledby="password-sessions-heading" className="flex flex-col gap-3">
      <h2 id="password-sessions-heading" className="text-xl font-semibold">
        {t("account:apps.passwordSessions.title")}
      </h2>
      <p className="text-slate-700 dark:text-slate-200">{t("account:apps.passwordSessions.intro")}</p>
      <ul className="flex flex-col gap-3">
        {view.passwordSessions.map((session, index) => (
          <li key={session.id}>
            <article
              aria-labelledby={`password-session-${index}`}
              className="flex flex-col gap-3 rounded-2xl border border-slate-200 bg-white p-5 sm:flex-row sm:items-start sm:justify-between dark:border-slate-800 dark:bg-slate-900"
            >
              <PasswordSessionDetails session={session} headingId={`password-session-${index}`} />
              <div className="flex shrink-0 flex-wrap items-center gap-2">
                {/* Its app password's page: what the apps signed in with it did (docs/decisions/0053). */}
                {session.appPasswordPagePath ? (
                  <a href={session.appPasswordPagePath} className={`${linkStyle} text-sm`} aria-describedby={`password-session-${index}`}>
                    {t("account:apps.passwordSessions.appPasswordPage")}
                  </a>
                ) : null}
                {/* A second step, as for an OAuth app: the confirmation says what ends (no JavaScript needed). */}
                <form method="get">
                  <input type="hidden" name="sign-out" value={session.id} />
                  <button type="submit" className={`${dangerButton} ${smallButton}`} aria-describedby={`password-session-${index}`}>
                    {t("account:apps.passwordSessions.signOut")}
                  </button>
                </form>
              </div>
            </article>
          </li>
        ))}
      </ul>
    </section>
  );
}

function PasswordSessionDetails({ session, headingId }: { session: PasswordSessionView; headingId: string }) {
  const { t } = useT();
  return (
    <div className="flex min-w-0 flex-col gap-1">
      <h3 id={headingId} className="font-semibold break-words">
        {session.appPasswordName ? t("account:apps.passwordSessions.withAppPassword", { name: session.appPasswordName }) : t("account:apps.passwordSessions.withPassword")}
      </h3>
      <dl className="grid grid-cols-[auto_1fr] gap-x-3 gap-y-0.5 text-sm">
        <dt className="text-slate-600 dark:text-slate-300">{t("account:apps.passwordSessions.signedIn")}</dt>
        <dd>
          <DateTime iso={session.createdAt} />
        </dd>
        <dt className="text-slate-600 dark:text-slate-300">{t("account:apps.lastUsed")}</dt>
        <dd>
          <DateTime iso={session.lastUsedAt} />
        </dd>
        <dt className="text-slate-600 dark:text-slate-300">{t("account:apps.passwordSessions.app")}</dt>
        <dd className="font-mono text-xs break-all">{session.userAgent ?? t("account:apps.passwordSessions.unknownApp")}</dd>
      </dl>
    </div>
  );
}

/** "Sign this app out?": Sign out is a form post, Cancel a link back to the list. */
function ConfirmSignOut({ view, session }: { view: AppsView; session: PasswordSessionView }) {
  const { t } = useT();
  return (
    <AccountShell base={view} current="/account/apps" title={t("account:apps.passwordSessions.confirm.title")}>
      <section className="flex flex-col gap-4 rounded-2xl border border-red-300 bg-white p-5 dark:border-red-800 dark:bg-slate-900">
        <PasswordSessionDetails session={session} headingId="sign-out-question" />
        <ConfirmForm
          effects={[t("account:apps.passwordSessions.confirm.signsOut"), t("account:apps.passwordSessions.confirm.again")]}
          effectsId="sign-out-ends"
          csrfToken={view.csrfToken}
          fields={{ intent: "sign-out", session: session.id }}
          submit={t("account:apps.passwordSessions.confirm.submit")}
          cancel={t("account:apps.passwordSessions.confirm.cancel")}
          cancelHref="/account/apps"
        />
      </section>
    </AccountShell>
  );
}

function ConnectedApp({ app, index }: { app: ConnectedAppView; index: number }) {
  const headingId = `app-${index}`;
  const { t, language } = useT();
  return (
    <article aria-labelledby={headingId} className="flex flex-col gap-4 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
      <div className="flex flex-wrap items-start justify-between gap-3">
        <div className="flex min-w-0 flex-1 flex-col gap-2">
          {/* Verified first (its host, or "An app on this device"); the app's own name second, as its claim. */}
          <h2 id={headingId} className="text-lg font-semibold">
            <VerifiedName client={app} title />
          </h2>
          <ClaimedIdentity client={app} size="sm" />
          {app.clientUri && /^https?:\/\//.test(app.clientUri) ? (
            <a href={app.clientUri} className={`${linkStyle} text-sm`} target="_blank" rel="noopener noreferrer">
              {t("account:apps.homepage")}
              <span className="sr-only"> {t("account:apps.homepageOf", { name: app.name ?? verifiedNameText(t, app) })}</span>
            </a>
          ) : null}
        </div>
        {/* A second step, not the revocation itself: the confirmation names the app and what it loses (no JavaScript needed). */}
        <form method="get">
          <input type="hidden" name="revoke" value={app.clientId} />
          <button type="submit" className={dangerButton} aria-describedby={headingId}>
            {t("account:apps.revoke")}
          </button>
        </form>
      </div>
      <IdentityCaution client={app} id={`${headingId}-caution`} />
      <dl className="grid grid-cols-1 gap-x-6 gap-y-1 text-sm sm:grid-cols-3">
        <div>
          <dt className="text-slate-600 dark:text-slate-300">{t("account:apps.firstAllowed")}</dt>
          <dd>
            <DateTime iso={app.firstAuthorizedAt} />
          </dd>
        </div>
        <div>
          <dt className="text-slate-600 dark:text-slate-300">{t("account:apps.lastUsed")}</dt>
          <dd>{app.lastUsedAt ? <DateTime iso={app.lastUsedAt} /> : t("account:apps.notYet")}</dd>
        </div>
        <div>
          <dt className="text-slate-600 dark:text-slate-300">{t("account:apps.activeSignIns")}</dt>
          <dd>{new Intl.NumberFormat(language).format(app.activeGrants)}</dd>
        </div>
      </dl>
      {app.emailDeclined ? <p className="text-sm text-slate-700 dark:text-slate-200">{t("account:apps.emailDeclined")}</p> : null}
      <a href={app.pagePath} className={linkStyle}>
        {t("account:apps.details")}
        <span className="sr-only"> {t("account:apps.detailsOf", { name: app.name ?? verifiedNameText(t, app) })}</span>
      </a>
      <details className="text-sm">
        <summary className={summaryStyle}>{t("account:apps.whatItCanDo")}</summary>
        <div className="mt-3 text-base">
          <PermissionGroupsView groups={app.groups} idPrefix={`app-${index}-permissions`} />
        </div>
        <ScopeList scope={app.scope} className="mt-3 flex flex-col font-mono text-xs text-slate-600 dark:text-slate-300" />
      </details>
    </article>
  );
}

/**
 * "Revoke access for …?": on a phone, the question, what the app loses and the two buttons come first; the
 * permissions it loses follow, folded. Revoke access is a form post; Cancel a link back to the list, so both work
 * without JavaScript.
 */
function ConfirmRevoke({ view, app }: { view: AppsView; app: ConnectedAppView }) {
  const { t } = useT();
  return (
    <AccountShell base={view} current="/account/apps" title={t("account:apps.confirm.title")}>
      <section aria-labelledby="revoke-question" className="flex flex-col gap-4 rounded-2xl border border-red-300 bg-white p-5 dark:border-red-800 dark:bg-slate-900">
        <h2 id="revoke-question" className="text-lg font-semibold">
          <VerifiedName client={app} title />
        </h2>
        <ClaimedIdentity client={app} size="sm" />
        <ConfirmForm
          effects={[t("account:apps.confirm.signsOut"), t("account:apps.confirm.permissions"), t("account:apps.confirm.askAgain")]}
          effectsId="revoke-loses"
          note={<p className="text-sm text-slate-700 dark:text-slate-200">{t("account:apps.confirm.keeps")}</p>}
          csrfToken={view.csrfToken}
          fields={{ intent: "revoke", client_id: app.clientId }}
          submit={t("account:apps.confirm.submit")}
          cancel={t("account:apps.confirm.cancel")}
          cancelHref="/account/apps"
        />
        <details className="text-sm">
          <summary className={summaryStyle}>{t("account:apps.whatItCanDo")}</summary>
          <div className="mt-3 text-base">
            <PermissionGroupsView groups={app.groups} idPrefix="revoke-permissions" />
          </div>
        </details>
      </section>
    </AccountShell>
  );
}
