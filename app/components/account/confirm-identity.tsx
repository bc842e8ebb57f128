import { SignedInFormFields, useFormAccount } from "./form-account";
import type { ConfirmView } from "../../.server/screens/account/views";
import { PasskeySignIn } from "../passkey/passkey-sign-in";
import { Field } from "../ui/field";
import { useT } from "../ui/i18n";
import { ErrorMessage } from "../ui/messages";
import { primaryButton } from "../ui/styles";

type Props = {
  confirm: ConfirmView;
  csrfToken: string;
  handle: string;
  /** What confirming unlocks, in a sentence ("To add a passkey, …"). */
  reason: string;
  errors: Record<string, string>;
  /** Heading level: a section of its own (2) or part of one (3). */
  level?: 2 | 3;
};

/**
 * "Confirm it's you": the account's password (a plain form post, works
 * without JavaScript) or, with JavaScript, one of its passkeys. Success
 * returns to this page, where the action is then possible.
 */
export function ConfirmIdentity({ confirm, csrfToken, handle, reason, errors, level = 2 }: Props) {
  const Heading = level === 2 ? "h2" : "h3";
  const formError = errors.form;
  const account = useFormAccount();
  const { t } = useT();
  return (
    <section aria-labelledby="confirm-heading" className="flex flex-col gap-4 rounded-2xl border border-slate-200 bg-white p-5 text-slate-900 dark:border-slate-800 dark:bg-slate-900 dark:text-slate-100">
      <Heading id="confirm-heading" className="text-lg font-semibold">
        {t("account:confirm.title")}
      </Heading>
      <p id="confirm-reason" className="text-slate-700 dark:text-slate-200">
        {reason} {t("account:confirm.why", { count: confirm.windowMinutes })}
      </p>
      <form method="post" noValidate className="flex flex-col gap-4">
        <SignedInFormFields csrfToken={csrfToken} />
        <input type="hidden" name="intent" value="confirm" />
        {/* Lets password managers offer the password of the right account. */}
        <input type="text" name="username" autoComplete="username" defaultValue={handle} hidden readOnly />
        <Field
          id="confirm-password"
          name="password"
          label={t("account:confirm.password")}
          type="password"
          autoComplete="current-password"
          required
          error={errors.password}
          invalid={Boolean(formError)}
          describedBy={formError ? "confirm-error" : undefined}
        />
        {formError ? <ErrorMessage id="confirm-error">{formError}</ErrorMessage> : null}
        <button type="submit" className={`${primaryButton} self-start`}>
          {t("account:confirm.submit")}
        </button>
      </form>
      <ConfirmWithPasskey confirm={confirm} csrfToken={csrfToken} account={account} />
    </section>
  );
}

/**
 * "Use a passkey" for "Confirm it's you", when the account has one (JavaScript only): a passkey of `account` (none:
 * the selected one) over a challenge bound to this browser session, then `confirm.next`.
 */
export function ConfirmWithPasskey({ confirm, csrfToken, account }: { confirm: ConfirmView; csrfToken: string; account?: string }) {
  const { t } = useT();
  if (!confirm.passkeyOptions) return null;
  return (
    <PasskeySignIn
      options={confirm.passkeyOptions}
      postUrl="/account/reauthenticate"
      refreshUrl={account ? `/account/reauthenticate?${new URLSearchParams({ account })}` : "/account/reauthenticate"}
      fields={account ? { csrf_token: csrfToken, account, next: confirm.next } : { csrf_token: csrfToken, next: confirm.next }}
      autofill={false}
      label={t("account:confirm.passkey")}
      busyLabel={t("account:confirm.passkeyBusy")}
      retryHint={t("account:confirm.passkeyRetry")}
    />
  );
}
