import type { ConsentView } from "../../.server/screens/consent/consent-view";
import { Identifier } from "../ui/identifier";
import { ScopeList } from "./scope-list";
import { summaryStyle } from "../ui/styles";
import { isEmptyGroupsView } from "./permission-groups-util";
import { PermissionGroupsView } from "./permission-groups";
import { useT } from "../ui/i18n";

/**
 * What the app asks for: plain words first (a broad permission as a summary with its details folded under it),
 * permission sets by their title with their expansion one click away, and the raw values under "Technical
 * details". Technical names wrap only between their parts (ui/identifier.tsx).
 */
export function PermissionsSection({ view }: { view: ConsentView }) {
  const { t } = useT();
  return (
    <section aria-labelledby="permissions-heading" className="flex flex-col gap-3">
      <h2 id="permissions-heading" className="text-lg font-semibold">
        {view.rememberedConsent ? t("consent:permissionsHeadingRemembered") : t("consent:permissionsHeading")}
      </h2>

      {!isEmptyGroupsView(view.groups) ? <PermissionGroupsView groups={view.groups} idPrefix="direct" /> : null}

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
                <Identifier text={set.nsid} className="mt-2 block font-mono text-xs text-slate-600 dark:text-slate-300" />
              </details>
            </li>
          ))}
        </ul>
      ) : null}

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
    </section>
  );
}
