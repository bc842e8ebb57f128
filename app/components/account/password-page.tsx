import type { PasswordView } from "../../.server/account/account-views";
import { Field } from "../ui/field";
import { ErrorMessage } from "../ui/messages";
import { primaryButton } from "../ui/styles";
import { AccountShell } from "./account-shell";

type Props = { view: PasswordView; errors: Record<string, string> };

/** /account/password: current + new + confirmation. */
export function PasswordPage({ view, errors }: Props) {
  return (
    <AccountShell base={view} current="/account/password" title="Change your password" intro="Changing it signs out every other browser. Apps you allowed keep their access.">
      <form method="post" noValidate className="flex max-w-md flex-col gap-4 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
        <input type="hidden" name="csrf_token" value={view.csrfToken} />
        {/* Lets password managers store the new password for the right account. */}
        <input type="text" name="username" autoComplete="username" defaultValue={view.account.handle} hidden readOnly />
        <Field id="current_password" name="current_password" label="Current password" type="password" autoComplete="current-password" required error={errors.current_password} />
        <Field
          id="new_password"
          name="new_password"
          label="New password"
          type="password"
          autoComplete="new-password"
          required
          minLength={view.minLength}
          hint={`At least ${view.minLength} characters. A few unrelated words are easy to remember and hard to guess.`}
          error={errors.new_password}
        />
        <Field id="confirm_password" name="confirm_password" label="New password, again" type="password" autoComplete="new-password" required error={errors.confirm_password} />
        {errors.form ? <ErrorMessage>{errors.form}</ErrorMessage> : null}
        <button type="submit" className={`${primaryButton} self-start`}>
          Change password
        </button>
      </form>
    </AccountShell>
  );
}
