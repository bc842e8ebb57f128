import type { PermissionDescription, PermissionGroups } from "../../.server/oauth/scopes/scope-description";

type Props = {
  groups: PermissionGroups;
  /** Heading level of each family: 3 under a section's h2, 4 inside a permission set. */
  level?: 3 | 4;
  /** Prefix for element ids, unique on the page. */
  idPrefix: string;
};

/**
 * A scope in plain words, one block per family: general access, repository
 * writes (a table of collections × create/change/delete), uploads by media
 * type, calls by service, account and identity access with warnings.
 * Used by the consent screen and the connected apps page.
 */
export function PermissionGroupsView({ groups, level = 3, idPrefix }: Props) {
  const Heading = level === 3 ? "h3" : "h4";
  const headingClass = "mb-2 text-sm font-semibold tracking-wide text-slate-700 uppercase dark:text-slate-300";
  return (
    <div className="flex flex-col gap-5">
      {groups.general.length ? <PermissionList permissions={groups.general} /> : null}

      {groups.repository.length ? (
        <section aria-labelledby={`${idPrefix}-repo`}>
          <Heading id={`${idPrefix}-repo`} className={headingClass}>
            Records in your repository
          </Heading>
          <div className="overflow-x-auto rounded-lg border border-slate-200 dark:border-slate-700">
            <table className="w-full text-left text-sm">
              <caption className="sr-only">Which kinds of records the app may create, change or delete</caption>
              <thead className="bg-slate-100 dark:bg-slate-800">
                <tr>
                  <th scope="col" className="px-3 py-2 font-semibold">
                    Kind of record
                  </th>
                  <th scope="col" className="px-2 py-2 text-center font-semibold">
                    Create
                  </th>
                  <th scope="col" className="px-2 py-2 text-center font-semibold">
                    Change
                  </th>
                  <th scope="col" className="px-2 py-2 text-center font-semibold">
                    Delete
                  </th>
                </tr>
              </thead>
              <tbody>
                {groups.repository.map((row) => (
                  <tr key={row.collection} className="border-t border-slate-200 dark:border-slate-700">
                    <th scope="row" className="px-3 py-2 align-top font-normal">
                      <span className={row.collection === "*" ? "font-semibold text-amber-900 dark:text-amber-200" : "font-medium wrap-anywhere"}>
                        {row.label ?? row.collection}
                      </span>
                      {row.label && row.collection !== "*" ? (
                        <span className="block font-mono text-xs break-all text-slate-600 dark:text-slate-300">{row.collection}</span>
                      ) : null}
                      {!row.label ? null : row.collection === "*" ? (
                        <span className="block text-xs text-slate-700 dark:text-slate-300">Posts, likes, follows, your profile and everything else</span>
                      ) : null}
                    </th>
                    <Allowed allowed={row.create} />
                    <Allowed allowed={row.update} />
                    <Allowed allowed={row.delete} />
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      ) : null}

      {groups.uploads.length ? (
        <section aria-labelledby={`${idPrefix}-uploads`}>
          <Heading id={`${idPrefix}-uploads`} className={headingClass}>
            Upload files
          </Heading>
          <ul className="flex flex-col gap-1">
            {groups.uploads.map((upload) => (
              <li key={upload.accept} className="flex flex-wrap items-baseline gap-x-2">
                <span>{upload.label}</span>
                {upload.label !== upload.accept ? <span className="font-mono text-xs text-slate-600 dark:text-slate-300">{upload.accept}</span> : null}
              </li>
            ))}
          </ul>
        </section>
      ) : null}

      {groups.calls.length ? (
        <section aria-labelledby={`${idPrefix}-calls`}>
          <Heading id={`${idPrefix}-calls`} className={headingClass}>
            Use other services as you
          </Heading>
          <ul className="flex flex-col gap-3">
            {groups.calls.map((call) => (
              <li key={call.service}>
                <p>
                  {call.anyMethod ? "Anything" : call.methods.length === 1 ? "One method" : `${call.methods.length} methods`} on{" "}
                  <strong className="font-semibold break-all">{call.serviceLabel}</strong>
                </p>
                {call.methods.length ? (
                  <ul className="mt-1 flex flex-col gap-0.5 pl-4">
                    {call.methods.map((method) => (
                      <li key={method} className="font-mono text-xs break-all text-slate-700 dark:text-slate-300">
                        {method}
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
            Your account
          </Heading>
          <PermissionList permissions={groups.account} />
        </section>
      ) : null}

      {groups.identity.length ? (
        <section aria-labelledby={`${idPrefix}-identity`}>
          <Heading id={`${idPrefix}-identity`} className={headingClass}>
            Your identity
          </Heading>
          <PermissionList permissions={groups.identity} />
        </section>
      ) : null}

      {groups.other.length ? (
        <section aria-labelledby={`${idPrefix}-other`}>
          <Heading id={`${idPrefix}-other`} className={headingClass}>
            Other
          </Heading>
          <PermissionList permissions={groups.other} />
        </section>
      ) : null}
    </div>
  );
}

function Allowed({ allowed }: { allowed: boolean }) {
  return (
    <td className="px-2 py-2 text-center align-top">
      {allowed ? (
        <>
          <span aria-hidden="true" className="font-bold text-emerald-700 dark:text-emerald-300">
            ✓
          </span>
          <span className="sr-only">Yes</span>
        </>
      ) : (
        <>
          <span aria-hidden="true" className="text-slate-500 dark:text-slate-400">
            –
          </span>
          <span className="sr-only">No</span>
        </>
      )}
    </td>
  );
}

export function PermissionList({ permissions }: { permissions: PermissionDescription[] }) {
  return (
    <ul className="flex flex-col gap-2">
      {permissions.map((permission) => (
        <li
          key={permission.scope}
          className={`rounded-lg border p-3 ${permission.warning ? "border-amber-400 bg-amber-50 dark:border-amber-700 dark:bg-amber-950" : "border-slate-200 dark:border-slate-700"}`}
        >
          <p className="font-medium">
            {permission.warning ? (
              <span className="mr-1 font-semibold text-amber-900 dark:text-amber-200">
                <span aria-hidden="true">⚠</span> Caution:
              </span>
            ) : null}
            {permission.title}
          </p>
          {permission.detail ? <p className="text-sm text-slate-700 dark:text-slate-200">{permission.detail}</p> : null}
        </li>
      ))}
    </ul>
  );
}
