import { SignedInFormFields } from "./form-account";
import type { ActivityLineView, AppPageView, PermissionItemView } from "../../.server/screens/account/views";
import { ClaimedIdentity, IdentityCaution, VerifiedName } from "../consent/client-identity";
import { DateTime } from "../ui/date-time";
import { useT } from "../ui/i18n";
import { dangerButton, linkStyle, mutedText, smallButton, summaryStyle } from "../ui/styles";
import { AccountShell } from "./account-shell";

/**
 * /account/apps/<client_id> (docs/decisions/0053): on a phone, the app and its dates first, then what it did (each
 * line with the permission it used and Take back), then what it may do (each permission with Take back), then the
 * page's own address. Every control is a form: nothing needs JavaScript.
 */
export function AppPage({ view }: { view: AppPageView }) {
  const { t } = useT();
  if (view.takingBack) return <ConfirmTakeBack view={view} permission={view.takingBack} />;
  return (
    <AccountShell base={view} current="/account/apps" title={t("account:titles.app")}>
      <a href="/account/apps" className={`${linkStyle} text-sm`}>
        {t("account:app.back")}
      </a>
      <AppSummary view={view} />
      <Activity view={view} />
      <Permissions view={view} />
      <section aria-labelledby="app-address" className="flex flex-col gap-1 text-sm">
        <h2 id="app-address" className="font-semibold">
          {t("account:app.address")}
        </h2>
        <p className={mutedText}>{t("account:app.addressHint")}</p>
        <code className="break-all">{view.address}</code>
      </section>
    </AccountShell>
  );
}

function AppSummary({ view }: { view: AppPageView }) {
  const { t, language } = useT();
  const { app } = view;
  return (
    <section aria-labelledby="app-identity" className="flex flex-col gap-3 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
      <h2 id="app-identity" className="text-lg font-semibold">
        <VerifiedName client={app} title />
      </h2>
      <ClaimedIdentity client={app} size="sm" />
      <IdentityCaution client={app} id="app-identity-caution" />
      <dl className="grid grid-cols-[auto_1fr] gap-x-3 gap-y-0.5 text-sm">
        <dt className={mutedText}>{t("account:apps.firstAllowed")}</dt>
        <dd>
          <DateTime iso={app.firstAuthorizedAt} />
        </dd>
        <dt className={mutedText}>{t("account:apps.lastUsed")}</dt>
        <dd>{app.lastUsedAt ? <DateTime iso={app.lastUsedAt} /> : t("account:apps.notYet")}</dd>
        <dt className={mutedText}>{t("account:apps.activeSignIns")}</dt>
        <dd>{new Intl.NumberFormat(language).format(app.activeGrants)}</dd>
      </dl>
      {/* Revoke keeps its confirmation on the list's page, which names what the app loses. */}
      <form method="get" action="/account/apps">
        <input type="hidden" name="revoke" value={app.clientId} />
        <button type="submit" className={`${dangerButton} ${smallButton}`} aria-describedby="app-identity">
          {t("account:apps.revoke")}
        </button>
      </form>
    </section>
  );
}

/** One of the page's parts, under its heading. */
function Part({ id, title, children }: { id: string; title: string; children: React.ReactNode }) {
  return (
    <section aria-labelledby={id} className="flex flex-col gap-3">
      <h2 id={id} className="text-xl font-semibold">
        {title}
      </h2>
      {children}
    </section>
  );
}

function Activity({ view }: { view: AppPageView }) {
  const { t } = useT();
  return (
    <Part id="app-activity" title={t("account:app.activity.title")}>
      {!view.activityEnabled ? (
        <p className={mutedText}>{t("account:app.activity.off")}</p>
      ) : view.activity.length === 0 ? (
        <p className={mutedText}>{t("account:app.activity.none")}</p>
      ) : (
        <>
          <ul className="flex flex-col gap-3" data-testid="activity">
            {view.activity.map((line, index) => (
              <li key={`${line.kind} ${line.target} ${line.service ?? ""}`}>
                <ActivityLine view={view} line={line} id={`activity-${index}`} />
              </li>
            ))}
          </ul>
          <details className="text-sm">
            <summary className={summaryStyle}>{t("account:app.activity.byDay")}</summary>
            <ul className="mt-2 flex flex-col gap-2">
              {view.days.map(({ day, lines }) => (
                <li key={day}>
                  <h3 className="font-semibold">
                    <time dateTime={day}>{day.slice(0, 10)}</time>
                  </h3>
                  <ul className="list-disc pl-5">
                    {lines.map((line) => (
                      <li key={`${line.kind} ${line.target} ${line.service ?? ""}`}>
                        <LineWhat line={line} />
                      </li>
                    ))}
                  </ul>
                </li>
              ))}
            </ul>
          </details>
        </>
      )}
    </Part>
  );
}

/** "Created 3 records · app.bsky.feed.post": the act and its count in words, the technical name beside. */
function LineWhat({ line }: { line: ActivityLineView }) {
  const { t } = useT();
  return (
    <>
      {t(`account:app.activity.kinds.${line.kind}`, { count: line.count })}
      {" · "}
      <span className="font-mono text-xs break-all">{line.target === "" ? t("account:app.activity.other") : line.target}</span>
      {line.service ? <span className="font-mono text-xs break-all"> → {line.service}</span> : null}
    </>
  );
}

function ActivityLine({ view, line, id }: { view: AppPageView; line: ActivityLineView; id: string }) {
  const { t } = useT();
  return (
    <article aria-labelledby={id} className="flex flex-col gap-2 rounded-2xl border border-slate-200 bg-white p-4 dark:border-slate-800 dark:bg-slate-900">
      <p id={id} className="font-semibold">
        <LineWhat line={line} />
      </p>
      <dl className="grid grid-cols-[auto_1fr] gap-x-3 gap-y-0.5 text-sm">
        <dt className={mutedText}>{t("account:app.activity.last")}</dt>
        <dd>
          <DateTime iso={line.lastAt} />
        </dd>
        {line.permission ? (
          <>
            <dt className={mutedText}>{t("account:app.activity.permission")}</dt>
            <dd>{line.permission}</dd>
          </>
        ) : null}
      </dl>
      {line.takenBack ? (
        <p className="text-sm font-semibold text-red-800 dark:text-red-300">{t("account:app.takenBack")}</p>
      ) : line.item ? (
        <TakeBackForm view={view} item={line.item} describedBy={id} label={t("account:app.activity.takeBack")} />
      ) : null}
    </article>
  );
}

/** One permission's control: a broad one asks to confirm first (a GET to this page), a narrow one is taken back at once. */
function TakeBackForm({ view, item, describedBy, label, broad = false }: { view: AppPageView; item: string; describedBy: string; label: string; broad?: boolean }) {
  return (
    <form method={broad ? "get" : "post"}>
      {broad ? (
        <input type="hidden" name="take-back" value={item} />
      ) : (
        <>
          <SignedInFormFields csrfToken={view.csrfToken} />
          <input type="hidden" name="intent" value="take-back" />
          <input type="hidden" name="permission" value={item} />
        </>
      )}
      <button type="submit" className={`${dangerButton} ${smallButton}`} aria-describedby={describedBy}>
        {label}
      </button>
    </form>
  );
}

function Permissions({ view }: { view: AppPageView }) {
  const { t } = useT();
  return (
    <Part id="app-permissions" title={t("account:app.permissions.title")}>
      <p className={mutedText}>{t("account:app.permissions.intro")}</p>
      {view.app.emailDeclined ? <p className="text-sm">{t("account:apps.emailDeclined")}</p> : null}
      <ul className="flex flex-col gap-3" data-testid="permissions">
        {view.permissions.map((permission, index) => (
          <li key={permission.item}>
            <PermissionLine view={view} permission={permission} id={`permission-${index}`} />
          </li>
        ))}
      </ul>
    </Part>
  );
}

function PermissionLine({ view, permission, id }: { view: AppPageView; permission: PermissionItemView; id: string }) {
  const { t } = useT();
  return (
    <article
      aria-labelledby={id}
      className="flex flex-col gap-2 rounded-2xl border border-slate-200 bg-white p-4 sm:flex-row sm:items-center sm:justify-between dark:border-slate-800 dark:bg-slate-900"
    >
      <div className="flex min-w-0 flex-col gap-1">
        <p id={id} className={permission.takenBack ? "line-through" : undefined}>
          {permission.title}
        </p>
        <code className={`text-xs break-all ${mutedText}`}>{permission.item}</code>
      </div>
      {permission.takenBack ? (
        <p className="text-sm font-semibold text-red-800 dark:text-red-300">{t("account:app.takenBack")}</p>
      ) : (
        <TakeBackForm view={view} item={permission.item} describedBy={id} label={t("account:app.permissions.takeBack")} broad={permission.broad} />
      )}
    </article>
  );
}

/** "Take this permission back?": for a broad permission; Take back is a form post, Cancel a link back to the page. */
function ConfirmTakeBack({ view, permission }: { view: AppPageView; permission: PermissionItemView }) {
  const { t } = useT();
  const back = new URL(view.address).pathname;
  return (
    <AccountShell base={view} current="/account/apps" title={t("account:app.confirm.title")}>
      <section aria-labelledby="take-back-question" className="flex flex-col gap-4 rounded-2xl border border-red-300 bg-white p-5 dark:border-red-800 dark:bg-slate-900">
        <h2 id="take-back-question" className="text-lg font-semibold">
          <VerifiedName client={view.app} title />
        </h2>
        <p className="font-semibold">{permission.title}</p>
        <code className={`text-xs break-all ${mutedText}`}>{permission.item}</code>
        <ul id="take-back-effects" className="flex list-disc flex-col gap-1 pl-5">
          <li>{t("account:app.confirm.refused")}</li>
          <li>{t("account:app.confirm.rest")}</li>
          <li>{t("account:app.confirm.askAgain")}</li>
        </ul>
        <form method="post" action={back} className="flex flex-wrap items-center gap-4">
          <SignedInFormFields csrfToken={view.csrfToken} />
          <input type="hidden" name="intent" value="take-back" />
          <input type="hidden" name="permission" value={permission.item} />
          <button type="submit" className={dangerButton} aria-describedby="take-back-effects">
            {t("account:app.confirm.submit")}
          </button>
          <a href={back} className={linkStyle}>
            {t("account:app.confirm.cancel")}
          </a>
        </form>
      </section>
    </AccountShell>
  );
}
