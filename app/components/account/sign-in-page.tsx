import type { SignInView } from "../../.server/screens/account/views";
import { PasskeySignIn } from "../passkey/passkey-sign-in";
import { Field } from "../ui/field";
import { ErrorMessage } from "../ui/messages";
import { useT } from "../ui/i18n";
import { SignedOutPage } from "./signed-out-page";
import { linkStyle, primaryButton } from "../ui/styles";
import { StaySignedIn } from "./stay-signed-in";

type Props = { view: SignInView; errors: Record<string, string>; values: Record<string, string> };

/** /account for a visitor: password (a plain form post) or passkey. */
export function AccountSignIn({ view, errors, values }: Props) {
  const formError = errors.form;
  const adding = view.accounts.length > 0;
  const { t } = useT();
  return (
    <SignedOutPage title={adding ? t("account:signIn.addTitle") : t("account:titles.signIn")} intro={adding ? t("account:signIn.addIntro") : t("account:signInIntro")} notice={view.notice}>
      <form method="post" className="flex flex-col gap-4" noValidate>
        <input type="hidden" name="csrf_token" value={view.csrfToken} />
        <input type="hidden" name="next" value={view.next} />
        <Field
          id="identifier"
          name="identifier"
          label={t("account:signIn.identifier")}
          autoComplete="username webauthn"
          required
          defaultValue={values.identifier ?? ""}
          error={errors.identifier}
          invalid={Boolean(formError)}
          describedBy={formError ? "sign-in-error" : undefined}
        />
        <Field
          id="password"
          name="password"
          label={t("account:signIn.password")}
          type="password"
          autoComplete="current-password"
          required
          error={errors.password}
          invalid={Boolean(formError)}
          describedBy={formError ? "sign-in-error" : undefined}
        />
        <a href="/account/recover" className={`${linkStyle} self-start text-sm`}>
          {t("account:signIn.forgotPassword")}
        </a>
        <StaySignedIn />
        {formError ? <ErrorMessage id="sign-in-error">{formError}</ErrorMessage> : null}
        <button type="submit" className={`${primaryButton} w-full`}>
          {t("account:signIn.submit")}
        </button>
      </form>
      {view.passkey ? (
        <div className="flex flex-col gap-3">
          <PasskeySignIn
            options={view.passkey.options}
            postUrl="/account/passkey-auth"
            refreshUrl="/account/passkey-auth"
            fields={{ csrf_token: view.csrfToken, next: view.next }}
            staySignedInId="stay_signed_in"
            autofill
          />
        </div>
      ) : null}
      {adding ? (
        <a href="/account?choose=1" className={`${linkStyle} self-start`}>
          {t("account:signIn.backToAccounts")}
        </a>
      ) : null}
      {view.signUpOpen ? (
        <p className="text-sm text-slate-600 dark:text-slate-300">
          {t("account:newHereSignUp")}{" "}
          <a href="/account/sign-up" className={linkStyle}>
            {t("account:signUpLink")}
          </a>
        </p>
      ) : (
        <p className="text-sm text-slate-600 dark:text-slate-300">
          {t("account:newHere")}{" "}
          <a href="/" className={linkStyle}>
            {t("account:aboutServer")}
          </a>
        </p>
      )}
    </SignedOutPage>
  );
}
