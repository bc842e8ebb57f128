import type { ConsentView } from "../../.server/screens/consent/consent-view";
import { PasskeyError, PasskeyInlineButton, usePasskeySignIn, type PasskeyState } from "../passkey/passkey-sign-in";
import { Field } from "../ui/field";
import { StaySignedIn } from "../account/stay-signed-in";
import { linkStyle } from "../ui/styles";
import { useT } from "../ui/i18n";
import { ErrorMessage } from "../ui/messages";

type Props = { view: ConsentView; formError?: string; identifier?: string };

/**
 * The sign-in part of the consent form: handle or email and password (works without JavaScript), and a passkey
 * when one is registered. A login_hint fills and locks the identifier. When the app asked for a fresh sign-in
 * (prompt=login), the form says so and fills in the account this browser was signed in with.
 *
 * The tab order is the order of filling in (issue 28, item 19): "Use a passkey" (an alternative to typing the
 * handle), the handle, the password, then "Forgot password?" and Show, which sit on the password's lines.
 */
export function SignInFields({ view, formError, identifier }: Props) {
  const { passkey } = view;
  return passkey ? <WithPasskey view={view} formError={formError} identifier={identifier} options={passkey.options} /> : <Fields view={view} formError={formError} identifier={identifier} />;
}

/** The passkey on the handle's line, and its message under the handle: nothing else moves when it arrives (issue 28, item 18). */
function WithPasskey({ options, ...props }: Props & { options: NonNullable<ConsentView["passkey"]>["options"] }) {
  const { view } = props;
  const { t } = useT();
  const passkey = usePasskeySignIn({
    options,
    postUrl: "/oauth/passkey-auth",
    refreshUrl: `/oauth/passkey-auth?${new URLSearchParams({ client_id: view.clientId, request_uri: view.requestUri })}`,
    fields: { request_uri: view.requestUri, client_id: view.clientId, csrf_token: view.csrfToken },
    staySignedInId: "stay_signed_in",
    autofill: true,
  });
  return <Fields {...props} passkey={passkey} passkeyLabel={t("passkey:useOne")} />;
}

function Fields({ view, formError, identifier, passkey, passkeyLabel }: Props & { passkey?: PasskeyState; passkeyLabel?: string }) {
  const describedBy = formError ? "form-error" : undefined;
  const fresh = view.freshSignIn;
  const { t } = useT();
  return (
    <fieldset className="flex flex-col gap-3" aria-describedby={fresh ? "fresh-sign-in" : undefined}>
      {/* The heading already says "Sign in to give …": the legend names the group for assistive technology only. */}
      <legend className={view.step === "sign-in" || view.step === "sign-in-again" ? "sr-only" : "mb-2 text-lg font-semibold"}>{t("consent:signIn")}</legend>
      {view.addingAccount ? (
        <p className="text-sm text-slate-700 dark:text-slate-200">
          {t("consent:addingAccount")}{" "}
          <a href={view.links.choose} className={linkStyle}>
            {t("consent:backToAccounts")}
          </a>
        </p>
      ) : null}
      {fresh ? (
        <p id="fresh-sign-in" className="rounded-lg bg-slate-100 p-3 text-sm text-slate-800 dark:bg-slate-800 dark:text-slate-100">
          {fresh.handle ? t("consent:freshSignIn") : t("consent:freshSignInSignedOut")}
        </p>
      ) : null}
      <Field
        id="identifier"
        name="identifier"
        label={t("consent:identifier")}
        autoComplete="username webauthn"
        required
        defaultValue={identifier ?? view.loginHint ?? fresh?.handle ?? ""}
        readOnly={Boolean(view.loginHint)}
        hint={view.loginHint ? t("consent:hintLocked") : undefined}
        describedBy={describedBy}
        labelAside={passkey && passkeyLabel ? <PasskeyInlineButton passkey={passkey} label={passkeyLabel} /> : undefined}
        asideFirst
      />
      {passkey ? <PasskeyError passkey={passkey} /> : null}
      {/*
        After a failed sign-in the password field has the focus (autofocus: without JavaScript too) and the message
        stands right under it, tied to it: the person sees both where they were typing (issue 19).
      */}
      <Field
        id="password"
        name="password"
        label={t("consent:password")}
        type="password"
        autoComplete="current-password"
        required
        invalid={Boolean(formError)}
        describedBy={describedBy}
        autoFocus={Boolean(formError)}
        labelAside={
          // In this tab, carrying the way back: after the reset the person returns to this request (issue 19).
          <a href={`/account/recover?${new URLSearchParams({ return: `/oauth/authorize?${new URLSearchParams({ client_id: view.clientId, request_uri: view.requestUri })}` })}`} className={`${linkStyle} text-sm`}>
            {t("consent:forgotPassword")}
          </a>
        }
      />
      {formError ? <ErrorMessage id="form-error">{formError}</ErrorMessage> : null}
      <StaySignedIn />
    </fieldset>
  );
}
