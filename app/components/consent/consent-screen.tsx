import type { ConsentView } from "../../.server/screens/consent/consent-view";
import { Card } from "../ui/card";
import { ErrorMessage, Notice } from "../ui/messages";
import { primaryButton, secondaryButton } from "../ui/styles";
import { ClientIdentity } from "./client-identity";
import { PermissionsSection } from "./permissions-section";
import { SignedInAccount } from "./signed-in-account";
import { SignInFields } from "./sign-in-fields";

type Props = { view: ConsentView; formError?: string; identifier?: string };

/**
 * The sign-in and consent screen. One plain <form method="post">: sign-in,
 * Allow and Deny all work without JavaScript; JavaScript only adds passkeys.
 */
export function ConsentScreen({ view, formError, identifier }: Props) {
  const appName = view.client.name ?? (view.client.isLoopback ? "this application" : view.client.host);
  const signedIn = view.account && !view.requireLogin ? view.account : undefined;
  return (
    <main id="main" className="mx-auto flex min-h-screen w-full max-w-xl flex-col gap-4 px-3 py-4 sm:justify-center sm:px-6 sm:py-10">
      <p className="px-2 text-sm text-slate-600 dark:text-slate-300">
        <span className="font-semibold text-slate-800 dark:text-slate-100">Atrium</span> · your account server
      </p>
      <Card className="flex flex-col gap-6">
        <ClientIdentity client={view.client} rememberedConsent={view.rememberedConsent} />

        {view.rememberedConsent ? (
          <Notice>
            You have already allowed <strong className="font-semibold">{appName}</strong> this access. Press Allow to continue.
          </Notice>
        ) : null}

        {view.rememberedConsent ? (
          <details className="rounded-lg border border-slate-200 p-3 dark:border-slate-700">
            <summary className="cursor-pointer font-medium">Review what it can do</summary>
            <div className="mt-4">
              <PermissionsSection view={view} />
            </div>
          </details>
        ) : (
          <PermissionsSection view={view} />
        )}

        <form method="post" className="flex flex-col gap-5">
          <input type="hidden" name="csrf_token" value={view.csrfToken} />
          <input type="hidden" name="request_uri" value={view.requestUri} />
          <input type="hidden" name="client_id" value={view.clientId} />

          {signedIn ? <SignedInAccount handle={signedIn.handle} /> : <SignInFields view={view} formError={formError} identifier={identifier} />}

          {formError ? <ErrorMessage id="form-error">{formError}</ErrorMessage> : null}

          {/* Allow comes first in the form: pressing Enter in the password field means Allow, not Deny. */}
          <div className="flex flex-col gap-3 sm:flex-row">
            <button type="submit" name="decision" value="allow" className={`${primaryButton} sm:flex-1`}>
              Allow
            </button>
            <button type="submit" name="decision" value="deny" formNoValidate className={`${secondaryButton} sm:flex-1`}>
              Deny
            </button>
          </div>
          <p className="text-sm text-slate-600 dark:text-slate-300">
            You can take access back at any time under{" "}
            <a href="/account/apps" className="font-medium text-blue-700 underline dark:text-blue-300">
              Connected apps
            </a>
            .
          </p>
        </form>
      </Card>
    </main>
  );
}
