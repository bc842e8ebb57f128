import type { AppsView, ConnectedAppView } from "../../.server/screens/account/views";
import { PermissionGroupsView } from "../consent/permission-groups";
import { DateTime } from "../ui/date-time";
import { dangerButton, linkStyle } from "../ui/styles";
import { AccountShell } from "./account-shell";

/** /account/apps: every app with access, what it may do, and Revoke. */
export function ConnectedAppsPage({ view }: { view: AppsView }) {
  return (
    <AccountShell
      base={view}
      current="/account/apps"
      title="Connected apps"
      intro="These apps can act on your account within what you allowed. Revoking ends all of an app's access at once; it has to ask you again."
    >
      {view.apps.length === 0 ? (
        <p className="rounded-2xl border border-dashed border-slate-300 p-6 text-slate-700 dark:border-slate-700 dark:text-slate-200">
          No app has access to your account.
        </p>
      ) : (
        <ul className="flex flex-col gap-4">
          {view.apps.map((app, index) => (
            <li key={app.clientId}>
              <ConnectedApp app={app} csrfToken={view.csrfToken} index={index} />
            </li>
          ))}
        </ul>
      )}
    </AccountShell>
  );
}

function ConnectedApp({ app, csrfToken, index }: { app: ConnectedAppView; csrfToken: string; index: number }) {
  const name = app.name ?? (app.isLoopback ? "An application on this device" : app.host);
  const headingId = `app-${index}`;
  return (
    <article aria-labelledby={headingId} className="flex flex-col gap-4 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
      <div className="flex flex-wrap items-start justify-between gap-3">
        <div className="flex min-w-0 items-start gap-3">
          {app.logoUri && /^https:\/\//.test(app.logoUri) ? (
            <img src={app.logoUri} alt="" width={40} height={40} referrerPolicy="no-referrer" className="size-10 shrink-0 rounded-lg object-cover" />
          ) : (
            <div aria-hidden="true" className="flex size-10 shrink-0 items-center justify-center rounded-lg bg-blue-100 font-semibold text-blue-900 dark:bg-blue-950 dark:text-blue-100">
              {name.charAt(0).toUpperCase()}
            </div>
          )}
          <div className="min-w-0">
            <h2 id={headingId} className="text-lg font-semibold break-words">
              <bdi>{name}</bdi>
            </h2>
            <p className="text-sm text-slate-700 dark:text-slate-200">
              {app.isLoopback ? (
                app.name ? "An application on this device" : "A program running on your computer, not a website"
              ) : (
                <>
                  at <strong className="font-semibold break-all">{app.host}</strong>
                  {app.name ? <span className="text-slate-600 dark:text-slate-300"> · name chosen by the app</span> : null}
                </>
              )}
            </p>
            {app.clientUri && /^https?:\/\//.test(app.clientUri) ? (
              <a href={app.clientUri} className={`${linkStyle} text-sm`} target="_blank" rel="noopener noreferrer">
                Homepage<span className="sr-only"> of {name} (opens in a new tab)</span>
              </a>
            ) : null}
          </div>
        </div>
        <form method="post">
          <input type="hidden" name="csrf_token" value={csrfToken} />
          <input type="hidden" name="intent" value="revoke" />
          <input type="hidden" name="client_id" value={app.clientId} />
          <button type="submit" className={dangerButton} aria-describedby={headingId}>
            Revoke
          </button>
        </form>
      </div>
      <dl className="grid grid-cols-1 gap-x-6 gap-y-1 text-sm sm:grid-cols-3">
        <div>
          <dt className="text-slate-600 dark:text-slate-300">First allowed</dt>
          <dd>
            <DateTime iso={app.firstAuthorizedAt} />
          </dd>
        </div>
        <div>
          <dt className="text-slate-600 dark:text-slate-300">Last used</dt>
          <dd>{app.lastUsedAt ? <DateTime iso={app.lastUsedAt} /> : "Not yet"}</dd>
        </div>
        <div>
          <dt className="text-slate-600 dark:text-slate-300">Active sign-ins</dt>
          <dd>{app.activeGrants}</dd>
        </div>
      </dl>
      <details className="text-sm">
        <summary className="cursor-pointer font-medium text-blue-700 dark:text-blue-300">What it can do</summary>
        <div className="mt-3 text-base">
          <PermissionGroupsView groups={app.groups} idPrefix={`app-${index}-permissions`} />
        </div>
        <p className="mt-3 font-mono text-xs break-all text-slate-600 dark:text-slate-300">{app.scope}</p>
      </details>
    </article>
  );
}
