import { ConfirmForm, PostButton } from "./form-account";
import { ActivityHistory, PageAddress } from "./activity-history";
import type { ActivityLineView, AppPageView, PermissionItemView } from "../../.server/screens/account/views";
import { ClaimedIdentity, IdentityCaution, VerifiedName } from "../consent/client-identity";
import { DateTime } from "../ui/date-time";
import { useT } from "../ui/i18n";
import { dangerButton, linkStyle, mutedText, smallButton } from "../ui/styles";
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
      <ActivityHistory enabled={view.activityEnabled} lines={view.activity} days={view.days} control={(line, describedBy) => <LineControl view={view} line={line} describedBy={describedBy} />} />
      <Permissions view={view} />
      <PageAddress address={view.address} hint={t("account:app.addressHint")} />
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

/** A line's control: Take this back, for exactly its act; "Taken back" once it is. */
function LineControl({ view, line, describedBy }: { view: AppPageView; line: ActivityLineView; describedBy: string }) {
  const { t } = useT();
  if (line.takenBack) return <p className="text-sm font-semibold text-red-800 dark:text-red-300">{t("account:app.takenBack")}</p>;
  return line.item ? <TakeBackForm view={view} item={line.item} describedBy={describedBy} label={t("account:app.activity.takeBack")} /> : null;
}

/** One permission's control: a broad one asks to confirm first (a GET to this page), a narrow one is taken back at once. */
function TakeBackForm({ view, item, describedBy, label, broad = false }: { view: AppPageView; item: string; describedBy: string; label: string; broad?: boolean }) {
  if (!broad) return <PostButton csrfToken={view.csrfToken} fields={{ intent: "take-back", permission: item }} label={label} className={`${dangerButton} ${smallButton}`} describedBy={describedBy} />;
  return (
    <form method="get">
      <input type="hidden" name="take-back" value={item} />
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
        <ConfirmForm
          effects={[t("account:app.confirm.refused"), t("account:app.confirm.rest"), t("account:app.confirm.askAgain")]}
          effectsId="take-back-effects"
          csrfToken={view.csrfToken}
          action={back}
          fields={{ intent: "take-back", permission: permission.item }}
          submit={t("account:app.confirm.submit")}
          cancel={t("account:app.confirm.cancel")}
          cancelHref={back}
        />
      </section>
    </AccountShell>
  );
}
