import type { ConsentView } from "../../.server/oauth/authorize/consent-view";
import { Card } from "../ui/card";

type Props = { view: ConsentView; formError?: string; identifier?: string };

const buttonBase =
  "inline-flex min-h-11 flex-1 items-center justify-center rounded-xl px-4 py-2 text-base font-semibold focus-visible:outline-3";

export function ConsentScreen({ view, formError, identifier }: Props) {
  const { client } = view;
  const displayName = client.name ?? client.host;
  return (
    <main className="mx-auto flex min-h-screen w-full max-w-lg flex-col gap-4 p-4 sm:justify-center sm:p-6">
      <Card>
        <header className="mb-4 flex flex-col gap-1">
          <p className="text-sm text-slate-600 dark:text-slate-400">Sign in to allow</p>
          <h1 className="text-2xl font-semibold break-words">
            {displayName}
            {client.name ? <span className="sr-only"> (name chosen by the app)</span> : null}
          </h1>
          <p className="text-sm text-slate-600 dark:text-slate-400">
            {client.isLoopback ? "An application on this device" : <>from <strong className="font-semibold">{client.host}</strong></>}
            {client.name ? " · the name is the app's own claim" : null}
          </p>
          <p className="text-sm text-slate-600 break-all dark:text-slate-400">
            You will return to <span className="font-mono">{client.redirectUri}</span>
          </p>
        </header>

        <section aria-labelledby="permissions-heading" className="mb-4">
          <h2 id="permissions-heading" className="mb-2 text-base font-semibold">
            This app asks to
          </h2>
          <ul className="flex flex-col gap-2">
            {view.permissions.map((permission) => (
              <li
                key={permission.scope}
                className={`rounded-lg border p-3 ${permission.warning ? "border-amber-400 bg-amber-50 dark:border-amber-600 dark:bg-amber-950" : "border-slate-200 dark:border-slate-700"}`}
              >
                <p className="font-medium">{permission.title}</p>
                {permission.detail ? <p className="text-sm text-slate-700 dark:text-slate-300">{permission.detail}</p> : null}
              </li>
            ))}
          </ul>
          {view.permissionSets.map((set) => (
            <div key={set.nsid} className="mt-2 rounded-lg border border-slate-200 p-3 dark:border-slate-700">
              <p className="font-medium">{set.title}</p>
              {set.detail ? <p className="text-sm text-slate-700 dark:text-slate-300">{set.detail}</p> : null}
              <details className="mt-1 text-sm">
                <summary className="cursor-pointer text-slate-600 dark:text-slate-400">What this includes</summary>
                <ul className="mt-1 list-disc pl-5">
                  {set.permissions.map((permission) => (
                    <li key={permission.scope}>{permission.title}</li>
                  ))}
                </ul>
              </details>
            </div>
          ))}
          <details className="mt-2 text-sm">
            <summary className="cursor-pointer text-slate-600 dark:text-slate-400">Technical details</summary>
            <p className="mt-1 font-mono break-all">{view.scope}</p>
          </details>
        </section>

        <form method="post" className="flex flex-col gap-4" noValidate={false}>
          <input type="hidden" name="csrf_token" value={view.csrfToken} />
          <input type="hidden" name="request_uri" value={view.requestUri} />
          <input type="hidden" name="client_id" value={view.clientId} />

          {view.account && !view.requireLogin ? (
            <div className="flex flex-wrap items-center justify-between gap-2 rounded-lg bg-slate-100 p-3 dark:bg-slate-800">
              <p>
                Signed in as <strong>@{view.account.handle}</strong>
              </p>
              <button type="submit" name="decision" value="switch_account" formNoValidate className="text-sm text-blue-700 underline dark:text-blue-400">
                Not you? Use another account
              </button>
            </div>
          ) : (
            <fieldset className="flex flex-col gap-3">
              <legend className="mb-1 text-base font-semibold">Sign in</legend>
              <label className="flex flex-col gap-1">
                <span>Handle or email</span>
                <input
                  name="identifier"
                  autoComplete="username webauthn"
                  required
                  defaultValue={identifier ?? view.loginHint ?? view.account?.handle ?? ""}
                  readOnly={Boolean(view.loginHint)}
                  aria-describedby={formError ? "form-error" : undefined}
                  className="rounded-lg border border-slate-300 bg-white px-3 py-2 dark:border-slate-600 dark:bg-slate-950"
                />
              </label>
              <label className="flex flex-col gap-1">
                <span>Password</span>
                <input
                  name="password"
                  type="password"
                  autoComplete="current-password"
                  required
                  aria-invalid={formError ? true : undefined}
                  aria-describedby={formError ? "form-error" : undefined}
                  className="rounded-lg border border-slate-300 bg-white px-3 py-2 dark:border-slate-600 dark:bg-slate-950"
                />
              </label>
            </fieldset>
          )}

          {formError ? (
            <p id="form-error" role="alert" className="rounded-lg bg-red-50 p-3 text-red-800 dark:bg-red-950 dark:text-red-200">
              {formError}
            </p>
          ) : null}

          <div className="flex gap-3">
            <button
              type="submit"
              name="decision"
              value="deny"
              formNoValidate
              className={`${buttonBase} border border-slate-300 bg-white text-slate-900 hover:bg-slate-100 dark:border-slate-600 dark:bg-slate-900 dark:text-slate-100`}
            >
              Deny
            </button>
            <button type="submit" name="decision" value="allow" className={`${buttonBase} bg-blue-700 text-white hover:bg-blue-800`}>
              Allow
            </button>
          </div>
        </form>
      </Card>
    </main>
  );
}
