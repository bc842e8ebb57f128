import type { PermissionGroups } from "../../.server/screens/permission-view";
import type { ConsentView } from "../../.server/screens/consent/consent-view";
import { Identifier } from "../ui/identifier";
import { ScopeList } from "./scope-list";
import { summaryStyle } from "../ui/styles";
import { isEmptyGroupsView } from "./permission-groups-util";
import { DeleteCaution, listOf, PermissionGroupsView, PermissionList } from "./permission-groups";
import { useT } from "../ui/i18n";

/**
 * What the app asks for, short enough for a phone (issue 19): one line per family of permissions in plain words,
 * every caution in full (deleting records, taking over the handle or the identity, a broad permission), and the
 * details (the table of records and actions, each call by name) folded under "See all permissions in detail" — a
 * <details>, so it opens without JavaScript. Permission sets by their title with their expansion one click away,
 * and the raw values under "Technical details". Technical names wrap only between their parts (ui/identifier.tsx).
 */
export function PermissionsSection({ view }: { view: ConsentView }) {
  const { t } = useT();
  const { groups } = view;
  // Cautions are never folded: the person reads them before Allow.
  const cautions = [...groups.account, ...groups.identity, ...groups.other].filter((permission) => permission.warning);
  const folded: PermissionGroups = { ...groups, general: [] };
  return (
    <section aria-labelledby="permissions-heading" className="flex flex-col gap-3">
      <h2 id="permissions-heading" className="text-lg font-semibold">
        {view.rememberedConsent ? t("consent:permissionsHeadingRemembered") : t("consent:permissionsHeading")}
      </h2>

      {groups.general.length ? <PermissionList permissions={groups.general} /> : null}
      <PermissionSummary lines={view.summary} />
      {view.emailOptional ? <ShareEmail declinedBefore={view.emailDeclined} /> : null}
      <DeleteCaution groups={groups} />
      {cautions.length ? <PermissionList permissions={cautions} /> : null}

      {view.permissionSets.length ? (
        <ul className="flex flex-col gap-3">
          {view.permissionSets.map((set, index) => (
            <li key={set.nsid} className="rounded-lg border border-slate-200 p-3 dark:border-slate-700">
              <h3 className="font-semibold">
                <bdi>{set.title}</bdi>
              </h3>
              {set.detail ? (
                <p dir="auto" className="text-sm text-slate-700 dark:text-slate-200">
                  {set.detail}
                </p>
              ) : null}
              <details className="mt-2 text-sm">
                <summary className={summaryStyle}>{t("consent:whatThisIncludes")}</summary>
                <div className="mt-3">
                  <PermissionGroupsView groups={set.groups} level={4} idPrefix={`set-${index}`} />
                </div>
                <Identifier text={set.nsid} block className="mt-2 font-mono text-xs text-slate-600 dark:text-slate-300" />
              </details>
            </li>
          ))}
        </ul>
      ) : null}

      {/* The technical details go in the same fold when there is one: one line less before Allow. */}
      {!isEmptyGroupsView(folded) ? (
        <details className="text-sm">
          <summary className={summaryStyle}>{t("consent:seeAllPermissions")}</summary>
          <div className="mt-3 flex flex-col gap-3">
            <div className="text-base">
              <PermissionGroupsView groups={folded} idPrefix="direct" hideDeleteCaution />
            </div>
            <TechnicalDetails view={view} />
          </div>
        </details>
      ) : (
        <TechnicalDetails view={view} />
      )}
    </section>
  );
}

/** One line per family of what the app asks for directly, in plain words (scope-description.ts, summarizePermissions). */
function PermissionSummary({ lines }: { lines: ConsentView["summary"] }) {
  const { t, language } = useT();
  if (!lines.length) return null;
  return (
    <ul className="flex flex-col gap-1 px-1">
      {lines.map((line) => (
        <li key={line.key} className="flex gap-1.5">
          <span aria-hidden="true" className="font-bold text-emerald-700 dark:text-emerald-300">
            ✓
          </span>
          <span className="min-w-0">{t("consent:summaryLine", { family: line.family, items: listOf(language, line.items) })}</span>
        </li>
      ))}
    </ul>
  );
}

/** The raw values: the scope, the client_id and the redirect URI. */
function TechnicalDetails({ view }: { view: ConsentView }) {
  const { t } = useT();
  return (
    <details className="text-sm">
      <summary className="cursor-pointer font-medium text-slate-700 dark:text-slate-200">{t("consent:technicalDetails")}</summary>
      <dl className="mt-2 flex flex-col gap-2">
        <div>
          <dt className="font-semibold">{t("consent:scope")}</dt>
          <dd>
            <ScopeList scope={view.scope} id="granted-scope" className="mt-1 flex flex-col font-mono" />
          </dd>
        </div>
        <div>
          <dt className="font-semibold">{t("consent:clientId")}</dt>
          <dd className="font-mono">
            <Identifier text={view.clientId} />
          </dd>
        </div>
        <div>
          <dt className="font-semibold">{t("consent:redirectUri")}</dt>
          <dd className="font-mono">
            <Identifier text={view.client.redirectUri} />
          </dd>
        </div>
      </dl>
    </details>
  );
}

/**
 * The email address is optional (issue 19): ticked by default, as the app asked, or unticked when the person declined it
 * the last time this app asked (docs/decisions/0032); unticked, Allow grants the rest without it. `email_choice` tells
 * the server this screen offered the choice (an unticked box sends nothing).
 */
function ShareEmail({ declinedBefore }: { declinedBefore: boolean }) {
  const { t } = useT();
  return (
    <div className="flex items-start gap-2.5 px-1">
      <input type="hidden" name="email_choice" value="1" />
      <input id="share_email" name="share_email" type="checkbox" defaultChecked={!declinedBefore} className="mt-1 size-5 shrink-0 accent-brand" />
      <label htmlFor="share_email">{t("consent:shareEmail.label")}</label>
    </div>
  );
}
