import type { PermissionDescription, PermissionGroups } from "../../.server/screens/permission-view";
import { fill } from "../ui/fill";
import { slots, useT } from "../ui/i18n";
import { Identifier } from "../ui/identifier";
import { summaryStyle } from "../ui/styles";

type Props = {
  groups: PermissionGroups;
  /** Heading level of each family: 3 under a section's h2, 4 inside a permission set. */
  level?: 3 | 4;
  /** Prefix for element ids, unique on the page. */
  idPrefix: string;
  /** The caution about deleting records is shown elsewhere on the page (the consent screen's summary). */
  hideDeleteCaution?: boolean;
};

/**
 * A scope in plain words, one block per family: general access, repository
 * writes (a table of collections × create/change/delete), uploads by media
 * type, calls by service, account and identity access with warnings.
 * Used by the consent screen and the connected apps page.
 */
export function PermissionGroupsView({ groups, level = 3, idPrefix, hideDeleteCaution = false }: Props) {
  const Heading = level === 3 ? "h3" : "h4";
  const { t } = useT();
  const headingClass = "mb-2 text-sm font-semibold tracking-wide text-slate-700 uppercase dark:text-slate-300";
  return (
    <div className="flex flex-col gap-4">
      {groups.general.length ? <PermissionList permissions={groups.general} /> : null}

      {groups.repository.length ? (
        <section aria-labelledby={`${idPrefix}-repo`}>
          <Heading id={`${idPrefix}-repo`} className={headingClass}>
            {t("permissions:records")}
          </Heading>
          {/* Scrolls sideways when a language's column names do not fit a phone: reachable by keyboard then (WCAG 2.1.1). */}
          <div tabIndex={0} role="region" aria-labelledby={`${idPrefix}-repo`} className="overflow-x-auto rounded-lg border border-slate-200 dark:border-slate-700">
            <table className="w-full text-left text-sm">
              <caption className="sr-only">{t("permissions:recordsCaption")}</caption>
              <thead className="bg-slate-100 text-xs dark:bg-slate-800">
                <tr>
                  <th scope="col" className="px-2 py-1.5 font-semibold sm:px-3">
                    {t("permissions:kindOfRecord")}
                  </th>
                  <th scope="col" className="px-1 py-1.5 text-center font-semibold sm:px-1.5">
                    {t("permissions:create")}
                  </th>
                  <th scope="col" className="px-1 py-1.5 text-center font-semibold sm:px-1.5">
                    {t("permissions:change")}
                  </th>
                  <th scope="col" className="px-1 py-1.5 text-center font-semibold sm:px-1.5">
                    {t("permissions:delete")}
                  </th>
                </tr>
              </thead>
              <tbody>
                {groups.repository.map((row) => (
                  <tr key={row.collection} className="border-t border-slate-200 dark:border-slate-700">
                    <th scope="row" className="px-2 py-1.5 align-top font-normal sm:px-3">
                      <span className={row.collection === "*" ? "font-semibold text-amber-900 dark:text-amber-200" : "font-medium"}>{row.label}</span>
                      {row.collection !== "*" ? (
                        <Identifier text={row.collection} block className="font-mono text-xs text-slate-600 dark:text-slate-300" />
                      ) : (
                        <span className="block text-xs text-slate-700 dark:text-slate-300">{t("permissions:anyRecord")}</span>
                      )}
                    </th>
                    <Allowed allowed={row.create} />
                    <Allowed allowed={row.update} />
                    <Allowed allowed={row.delete} destructive />
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {hideDeleteCaution ? null : <DeleteCaution groups={groups} className="mt-2" />}
        </section>
      ) : null}

      {groups.uploads.length ? (
        <section aria-labelledby={`${idPrefix}-uploads`}>
          <Heading id={`${idPrefix}-uploads`} className={headingClass}>
            {t("permissions:uploads")}
          </Heading>
          <ul className="flex flex-col gap-1">
            {groups.uploads.map((upload) => (
              <li key={upload.accept} className="flex flex-wrap items-baseline gap-x-2">
                <span>{upload.label}</span>
                {upload.label !== upload.accept ? <Identifier text={upload.accept} className="font-mono text-xs text-slate-600 dark:text-slate-300" /> : null}
              </li>
            ))}
          </ul>
        </section>
      ) : null}

      {groups.calls.length ? (
        <section aria-labelledby={`${idPrefix}-calls`}>
          <Heading id={`${idPrefix}-calls`} className={headingClass}>
            {t("permissions:calls")}
          </Heading>
          <ul className="flex flex-col gap-3">
            {groups.calls.map((call) => (
              <li key={call.service}>
                <p>
                  {fill(call.anyMethod ? t("permissions:anythingOn", slots("service")) : t("permissions:methodsOn", { count: call.methods.length, ...slots("service") }), {
                    service: <Identifier text={call.serviceLabel} className="font-semibold" />,
                  })}
                </p>
                {call.methods.length ? (
                  <ul className="mt-1 flex flex-col gap-1 pl-4">
                    {call.methods.map((method) => (
                      <li key={method.nsid} className="text-sm">
                        {method.label} <Identifier text={method.nsid} className="font-mono text-xs text-slate-600 dark:text-slate-300" />
                      </li>
                    ))}
                  </ul>
                ) : null}
              </li>
            ))}
          </ul>
        </section>
      ) : null}

      {groups.account.length ? (
        <section aria-labelledby={`${idPrefix}-account`}>
          <Heading id={`${idPrefix}-account`} className={headingClass}>
            {t("permissions:account")}
          </Heading>
          <PermissionList permissions={groups.account} />
        </section>
      ) : null}

      {groups.identity.length ? (
        <section aria-labelledby={`${idPrefix}-identity`}>
          <Heading id={`${idPrefix}-identity`} className={headingClass}>
            {t("permissions:identity")}
          </Heading>
          <PermissionList permissions={groups.identity} />
        </section>
      ) : null}

      {groups.other.length ? (
        <section aria-labelledby={`${idPrefix}-other`}>
          <Heading id={`${idPrefix}-other`} className={headingClass}>
            {t("permissions:other")}
          </Heading>
          <PermissionList permissions={groups.other} />
        </section>
      ) : null}
    </div>
  );
}

/** A cell of the repository table; an allowed deletion is marked as the destructive power it is. */
function Allowed({ allowed, destructive = false }: { allowed: boolean; destructive?: boolean }) {
  const { t } = useT();
  return (
    <td className="px-1 py-1.5 text-center align-top sm:px-1.5">
      {allowed ? (
        destructive ? (
          <>
            <span aria-hidden="true" className="font-bold text-amber-800 dark:text-amber-300">
              ⚠✓
            </span>
            <span className="sr-only">{t("permissions:yesCaution")}</span>
          </>
        ) : (
          <>
            <span aria-hidden="true" className="font-bold text-emerald-700 dark:text-emerald-300">
              ✓
            </span>
            <span className="sr-only">{t("permissions:yes")}</span>
          </>
        )
      ) : (
        <>
          <span aria-hidden="true" className="text-slate-500 dark:text-slate-400">
            –
          </span>
          <span className="sr-only">{t("permissions:no")}</span>
        </>
      )}
    </td>
  );
}

/** Every kind of record the app may delete: a destructive power, marked Caution (nothing when it may delete none). */
export function DeleteCaution({ groups, className = "" }: { groups: PermissionGroups; className?: string }) {
  const { t, language } = useT();
  // Inside a sentence, the kinds of record are written as the language writes nouns there (German keeps capitals).
  const inSentence = (label: string) => (t("permissions:labelsInSentence") === "lowercase" ? label.toLocaleLowerCase(language) : label);
  const deletable = groups.repository.filter((row) => row.delete).map((row) => (row.collection === "*" ? t("permissions:anyRecordLower") : inSentence(row.label)));
  if (!deletable.length) return null;
  return (
    <p className={`rounded-lg border border-amber-400 bg-amber-50 p-2 text-sm text-amber-950 dark:border-amber-700 dark:bg-amber-950 dark:text-amber-50 ${className}`}>
      <span className="font-semibold">
        <span aria-hidden="true">⚠</span> {t("permissions:caution")}
      </span>{" "}
      {t("permissions:canDelete", { kinds: listOf(language, deletable) })}
    </p>
  );
}

export function listOf(language: string, items: string[]): string {
  return new Intl.ListFormat(language, { style: "long", type: "conjunction" }).format(items);
}

/**
 * Permissions in plain words: a caution card for the powerful ones, a plain line for the rest. A broad permission
 * (transition:generic) is a summary with what it includes folded under it (a <details>: works without JavaScript),
 * each destructive power marked Caution.
 */
export function PermissionList({ permissions }: { permissions: PermissionDescription[] }) {
  const { t } = useT();
  return (
    <ul className="flex flex-col gap-2">
      {permissions.map((permission) => (
        <li
          key={permission.scope}
          className={permission.warning ? "rounded-lg border border-amber-400 bg-amber-50 p-3 text-amber-950 dark:border-amber-700 dark:bg-amber-950 dark:text-amber-50" : "px-1"}
        >
          <p className="font-medium">
            {permission.warning ? (
              <span className="mr-1 font-semibold text-amber-900 dark:text-amber-200">
                <span aria-hidden="true">⚠</span> {t("permissions:caution")}
              </span>
            ) : (
              <span aria-hidden="true" className="mr-1.5 font-bold text-emerald-700 dark:text-emerald-300">
                ✓
              </span>
            )}
            {permission.title}
          </p>
          {permission.detail ? <p className={`text-sm ${permission.warning ? "" : "pl-5 text-slate-700 dark:text-slate-200"}`}>{permission.detail}</p> : null}
          {permission.includes?.length ? (
            <details className="mt-2 text-sm">
              <summary className={summaryStyle}>{t("permissions:whatThisIncludes")}</summary>
              <ul className="mt-2 flex flex-col gap-1">
                {permission.includes.map((power) => (
                  <li key={power.title} className="flex gap-1.5">
                    {power.warning ? (
                      <span className="shrink-0 font-semibold text-amber-900 dark:text-amber-200">
                        <span aria-hidden="true">⚠</span> {t("permissions:caution")}
                      </span>
                    ) : (
                      <span aria-hidden="true" className="shrink-0 font-bold text-emerald-700 dark:text-emerald-300">
                        ✓
                      </span>
                    )}
                    <span>{power.title}</span>
                  </li>
                ))}
              </ul>
              {permission.excludes ? <p className="mt-2">{permission.excludes}</p> : null}
            </details>
          ) : null}
        </li>
      ))}
    </ul>
  );
}
