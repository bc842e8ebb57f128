import { SignedInFormFields } from "./form-account";
import type { PasswordView } from "../../.server/screens/account/views";
import { Field } from "../ui/field";
import { useT } from "../ui/i18n";
import { ErrorMessage } from "../ui/messages";
import { dangerButton, primaryButton } from "../ui/styles";
import { NewPasswordFields } from "./new-password-fields";
import { AccountShell } from "./account-shell";
import { ConfirmIdentity } from "./confirm-identity";

const PASSWORD_FIELDS = ["current_password", "new_password", "confirm_password"] as const;

type FormState = { errors: Record<string, string>; values: Record<string, string> };

type Props = { view: PasswordView; errorsFor: (form: string) => FormState };

/** /account/password: current + new + confirmation; after a change, the offer to secure the account. */
export function PasswordPage({ view, errorsFor }: Props) {
  const errors = errorsFor("password").errors;
  const firstToCorrect = PASSWORD_FIELDS.find((field) => errors[field]) ?? (errors.form ? "current_password" : undefined);
  const { t } = useT();
  return (
    <AccountShell base={view} current="/account/password" title={t("account:titles.password")} intro={t("account:password.intro")}>
      <SecureAccount view={view} secure={errorsFor("secure")} confirm={errorsFor("confirm")} />
      <form method="post" noValidate className="flex max-w-md flex-col gap-4 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
        <SignedInFormFields csrfToken={view.csrfToken} />
        <input type="hidden" name="intent" value="change" />
        {/* Lets password managers store the new password for the right account. */}
        <input type="text" name="username" autoComplete="username" defaultValue={view.account.handle} hidden readOnly />
        {/* After a refused change, the first field to correct has the focus (autofocus: without JavaScript too; issue 19). */}
        <Field
          id="current_password"
          name="current_password"
          label={t("account:password.current")}
          type="password"
          autoComplete="current-password"
          required
          error={errors.current_password}
          autoFocus={firstToCorrect === "current_password"}
        />
        <NewPasswordFields minLength={view.minLength} errors={errors} focus={firstToCorrect} />
        {errors.form ? <ErrorMessage>{errors.form}</ErrorMessage> : null}
        <button type="submit" className={`${primaryButton} self-start`}>
          {t("account:password.submit")}
        </button>
      </form>
    </AccountShell>
  );
}

/**
 * "Secure your account", offered right after a password change: someone who
 * knew the old password may have left a way back in that the change does not
 * end (a passkey, an app). Shown also when its own form, or its "Confirm it's
 * you", has just failed.
 */
function SecureAccount({ view, secure, confirm }: { view: PasswordView; secure: FormState; confirm: FormState }) {
  const { passkeys, apps } = view.secure;
  const failed = Boolean(secure.errors.form) || Object.keys(confirm.errors).length > 0;
  const { t } = useT();
  if (!view.secure.offered && !failed) return null;
  return (
    <section aria-labelledby="secure-heading" className="flex flex-col gap-4 rounded-2xl border border-amber-400 bg-amber-50 p-5 text-amber-950 dark:border-amber-700 dark:bg-amber-950 dark:text-amber-50">
      <h2 id="secure-heading" className="text-lg font-semibold">
        {t("account:password.secure.title")}
      </h2>
      <p>{t("account:password.secure.why")}</p>
      {secure.errors.form ? <ErrorMessage>{secure.errors.form}</ErrorMessage> : null}
      {view.secure.confirm ? (
        <ConfirmIdentity confirm={view.secure.confirm} csrfToken={view.csrfToken} handle={view.account.handle} reason={t("account:password.secure.confirmReason")} errors={confirm.errors} level={3} />
      ) : (
        <form method="post" className="flex flex-col gap-4">
          <SignedInFormFields csrfToken={view.csrfToken} />
          <input type="hidden" name="intent" value="secure" />
          <ul className="flex list-disc flex-col gap-1 pl-5">
            <li>{passkeys > 0 ? t("account:password.secure.removesPasskeys", { count: passkeys }) : t("account:password.secure.removesNoPasskey")}</li>
            <li>{t("account:password.secure.signsOut")}</li>
          </ul>
          <div className="flex items-start gap-3">
            <input id="disconnect_apps" name="disconnect_apps" type="checkbox" defaultChecked aria-describedby="disconnect_apps-hint" className="mt-1 size-5 shrink-0 accent-brand" />
            <div className="flex flex-col gap-1">
              <label htmlFor="disconnect_apps" className="font-medium">
                {apps > 0 ? t("account:password.secure.disconnect", { count: apps }) : t("account:password.secure.disconnectNone")}
              </label>
              <p id="disconnect_apps-hint" className="text-sm">
                {t("account:password.secure.disconnectHint")}
              </p>
            </div>
          </div>
          <button type="submit" className={`${dangerButton} self-start`}>
            {t("account:password.secure.submit")}
          </button>
        </form>
      )}
    </section>
  );
}
