import type { ConsentView } from "../../.server/screens/consent/consent-view";
import { BrandFooter, BrandHeader } from "../ui/brand";
import { fill } from "../ui/fill";
import { slots, useT } from "../ui/i18n";
import { Identifier } from "../ui/identifier";
import { ActionNotice, ErrorMessage, Notice, Warning } from "../ui/messages";
import { linkStyle, primaryButton, secondaryButton } from "../ui/styles";
import { Field } from "../ui/field";
import { ConfirmWithPasskey } from "../account/confirm-identity";
import { ClaimedIdentity, ClientLinks, IdentityCaution, VerifiedName } from "./client-identity";
import { PermissionsSection } from "./permissions-section";
import { AccountChooser, SignedInAccount } from "./signed-in-account";
import { SignInFields } from "./sign-in-fields";

type Props = {
  view: ConsentView;
  formError?: string;
  identifier?: string;
  /** The password typed to reactivate was refused: the message under its field. */
  passwordError?: string;
};

/**
 * The sign-in and consent screen. One plain <form method="post"> around all of it: sign-in, Allow and Deny work
 * without JavaScript; JavaScript only adds passkeys. Allow and Deny sit in a bar that sticks to the bottom of the
 * window, so on a phone they are in view without scrolling whatever the app asks for (docs/decisions/0018).
 */
export function ConsentScreen({ view, formError, identifier, passwordError }: Props) {
  const signedIn = view.account && !view.requireLogin ? view.account : undefined;
  const { client } = view;
  const { t } = useT();
  return (
    <div className="mx-auto flex min-h-screen w-full max-w-xl flex-col gap-3 px-3 pt-3 pb-4 sm:px-6 sm:pt-8">
      <BrandHeader className="px-2" />
      <main id="main" className="flex flex-col">
        <form method="post" className="flex flex-col rounded-2xl border border-slate-200 bg-white shadow-sm dark:border-slate-800 dark:bg-slate-900">
          <input type="hidden" name="csrf_token" value={view.csrfToken} />
          <input type="hidden" name="request_uri" value={view.requestUri} />
          <input type="hidden" name="client_id" value={view.clientId} />

          <div className="flex flex-col gap-4 p-4 sm:gap-5 sm:p-6">
            {/*
              What the person must do comes first on a phone (issue 19): who asks, then the accounts to choose from,
              the account that answers, or the sign-in fields; the permissions follow, their details folded, their
              cautions in view. Allow and Deny stick to the window's bottom.
            */}
            <div className="flex flex-col gap-3">
              {/* What was verified names the app: its host, or "an app on this device"; its own name comes second. */}
              <h1 className="text-xl leading-snug font-semibold sm:text-2xl">{fill(t(`consent:heading.${view.step}`, slots("who")), { who: <VerifiedName client={client} /> })}</h1>
              {view.chooser ? <AccountChooser accounts={view.chooser} useAnother={view.links.useAnother} /> : null}
              <ClaimedIdentity client={client} returnsTo={client.isLoopback ? client.redirectUri : undefined} />
              {/* Where a web app receives the answer, when that is not the host named above (a loopback app's card says it). */}
              {client.isLoopback || redirectHost(client.redirectUri) === client.host ? null : (
                <p className="text-sm text-slate-700 dark:text-slate-200">
                  {fill(t("consent:returnsTo", slots("uri")), { uri: <Identifier text={client.redirectUri} className="font-mono text-[0.95em]" /> })}
                </p>
              )}
              <ClientLinks
                links={[
                  { href: client.clientUri, label: t("consent:identity.links.homepage") },
                  { href: client.tosUri, label: t("consent:identity.links.terms") },
                  { href: client.policyUri, label: t("consent:identity.links.privacy") },
                ]}
              />
            </div>

            <IdentityCaution client={client} id="identity-caution" />

            {view.notice ? <ActionNotice>{view.notice}</ActionNotice> : null}

            {view.chooser ? null : signedIn ? (
              // While reactivating, the ways out are links: Enter in the password field then presses Reactivate.
              <SignedInAccount handle={signedIn.handle} did={signedIn.did} otherAccounts={view.otherAccounts} links={view.reactivation ? view.links : undefined} />
            ) : (
              // A failed sign-in's message stands under the password field, which has the focus (issue 19).
              <SignInFields view={view} formError={formError} identifier={identifier} />
            )}

            {formError && (view.chooser || signedIn) ? <ErrorMessage id="form-error">{formError}</ErrorMessage> : null}

            {/* docs/decisions/0031: no app is given access to a deactivated account; it is reactivated here (issue 28, item 17). */}
            {signedIn && view.reactivation ? <Reactivation view={view} handle={signedIn.handle} did={signedIn.did} passwordError={passwordError} /> : null}

            {/* Allowed before, or to be decided once reactivated: what the app may do is one click away. */}
            {view.rememberedConsent || view.reactivation ? (
              <>
                {view.reactivation ? null : <Notice>{fill(t("consent:remembered", slots("who")), { who: <VerifiedName client={client} /> })}</Notice>}
                <details className="rounded-lg border border-slate-200 p-3 dark:border-slate-700">
                  <summary className="cursor-pointer font-medium">{t("consent:reviewPermissions")}</summary>
                  <div className="mt-4">
                    <PermissionsSection view={view} />
                  </div>
                </details>
              </>
            ) : (
              <PermissionsSection view={view} />
            )}

          </div>

          {/* Allow comes first in the form: pressing Enter in the password field means Allow, not Deny. */}
          <div
            role="group"
            aria-label={t("consent:actions")}
            className="sticky-actions sticky bottom-0 z-10 flex gap-3 rounded-b-2xl border-t border-slate-200 bg-white/95 px-4 py-3 shadow-[0_-4px_12px_-6px_rgb(15_23_42/0.25)] sm:px-6 dark:border-slate-700 dark:bg-slate-900/95"
          >
            {view.reactivation ? (
              <button type="submit" name="decision" value="reactivate" className={`${primaryButton} flex-1`} aria-describedby="account-deactivated">
                {t("consent:deactivated.submit")}
              </button>
            ) : view.chooser || view.accountDeactivated ? null : (
              <button type="submit" name="decision" value="allow" className={`${primaryButton} flex-1`}>
                {t("consent:allow")}
              </button>
            )}
            <button type="submit" name="decision" value="deny" formNoValidate className={`${secondaryButton} flex-1`}>
              {t("consent:deny")}
            </button>
          </div>
        </form>
        {/* After the answer, not before it: what comes later does not push Allow down on a phone. */}
        <p className="px-2 pt-3 text-sm text-slate-600 dark:text-slate-300">
          {fill(t("consent:takeBack", slots("link")), {
            link: (
              <a href="/account/apps" className={linkStyle}>
                {t("consent:connectedApps")}
              </a>
            ),
          })}
        </p>
      </main>
      <BrandFooter className="pt-2" />
    </div>
  );
}

/**
 * A deactivated account: what reactivating brings back and, when this browser's last proof is not recent, its
 * password (or, with JavaScript, a passkey, which returns to this screen). "Reactivate and continue" is in the bar.
 */
function Reactivation({ view, handle, did, passwordError }: { view: ConsentView; handle: string; did: string; passwordError?: string }) {
  const { t } = useT();
  const confirm = view.reactivation?.confirm;
  return (
    <Warning>
      <p id="account-deactivated">{fill(t("consent:deactivated.text", slots("who")), { who: <VerifiedName client={view.client} /> })}</p>
      {confirm ? (
        <div className="mt-3 flex flex-col gap-3">
          <p id="reactivate-why" className="text-sm">
            {t("account:deactivate.confirmReactivate")} {t("account:confirm.why", { count: confirm.windowMinutes })}
          </p>
          {/* Lets password managers offer the password of the right account. */}
          <input type="text" name="username" autoComplete="username" defaultValue={handle} hidden readOnly />
          <Field
            id="reactivate-password"
            name="password"
            type="password"
            label={t("account:confirm.password")}
            autoComplete="current-password"
            required
            error={passwordError}
            autoFocus={Boolean(passwordError)}
            describedBy="reactivate-why"
          />
          <ConfirmWithPasskey confirm={confirm} csrfToken={view.csrfToken} account={did} />
        </div>
      ) : null}
    </Warning>
  );
}

function redirectHost(uri: string): string | undefined {
  try {
    return new URL(uri).host;
  } catch {
    return undefined;
  }
}
