import type { ConsentView } from "../../.server/screens/consent/consent-view";
import { isEmptyGroupsView } from "./permission-groups-util";
import { PermissionGroupsView } from "./permission-groups";

/**
 * What the app asks for: direct permissions by family, permission sets by
 * their title and detail with the expansion one click away, and the raw
 * scope under "Technical details".
 */
export function PermissionsSection({ view }: { view: ConsentView }) {
  const anyWarning = view.groups.hasWarnings || view.permissionSets.some((set) => set.groups.hasWarnings);
  return (
    <section aria-labelledby="permissions-heading" className="flex flex-col gap-4">
      <h2 id="permissions-heading" className="text-lg font-semibold">
        {view.rememberedConsent ? "What it can do" : "This app asks to"}
      </h2>
      {anyWarning ? (
        <p className="text-sm text-slate-700 dark:text-slate-200">
          Some of this is powerful: read the items marked <strong className="font-semibold">Caution</strong> before you allow it.
        </p>
      ) : null}

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
                <summary className="cursor-pointer font-medium text-blue-700 dark:text-blue-300">What this includes</summary>
                <div className="mt-3">
                  <PermissionGroupsView groups={set.groups} level={4} idPrefix={`set-${index}`} />
                </div>
                <p className="mt-2 font-mono text-xs break-all text-slate-600 dark:text-slate-300">{set.nsid}</p>
              </details>
            </li>
          ))}
        </ul>
      ) : null}

      <details className="text-sm">
        <summary className="cursor-pointer font-medium text-slate-700 dark:text-slate-200">Technical details</summary>
        <dl className="mt-2 flex flex-col gap-2">
          <div>
            <dt className="font-semibold">Scope</dt>
            <dd>
              <p className="mt-1 font-mono break-all">{view.scope}</p>
            </dd>
          </div>
          <div>
            <dt className="font-semibold">Client ID</dt>
            <dd className="font-mono break-all">{view.clientId}</dd>
          </div>
          <div>
            <dt className="font-semibold">Redirect URI</dt>
            <dd className="font-mono break-all">{view.client.redirectUri}</dd>
          </div>
        </dl>
      </details>
    </section>
  );
}
