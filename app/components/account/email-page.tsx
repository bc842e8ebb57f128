import type { EmailView } from "../../.server/screens/account/views";
import { Field } from "../ui/field";
import { fill } from "../ui/fill";
import { slots, useT } from "../ui/i18n";
import { Identifier } from "../ui/identifier";
import { ErrorMessage } from "../ui/messages";
import { primaryButton, secondaryButton } from "../ui/styles";
import { AccountShell } from "./account-shell";
import { ConfirmIdentity } from "./confirm-identity";
import { SignedInFormFields } from "./form-account";

type FormState = { errors: Record<string, string>; values: Record<string, string> };

/**
 * /account/email (docs/decisions/0030): the current address, then the step the person is at — the code once one is
 * out, otherwise the new address (after "Confirm it's you" when needed). A refused field has the focus and its
 * message tied to it, with or without JavaScript.
 */
export function EmailPage({ view, errorsFor }: { view: EmailView; errorsFor: (form: string) => FormState }) {
  const { t } = useT();
  const request = errorsFor("email-request");
  const change = errorsFor("email-change");
  const asking = Object.keys(request.errors).length > 0;
  return (
    <AccountShell base={view} current="/account/email" title={t("account:titles.email")}>
      <p className="text-slate-700 dark:text-slate-200">
        {fill(t("account:emailChange.current", slots("email")), { email: <Identifier text={view.email} className="font-semibold" /> })}
      </p>
      {!view.available ? (
        <p className="text-slate-700 dark:text-slate-200">{t("account:emailChange.noEmail", { service: view.serviceName })}</p>
      ) : (
        <>
          {view.pendingEmail && !asking ? <ChangeForm view={view} sentTo={view.pendingEmail} {...change} /> : null}
          {view.confirm ? (
            <ConfirmIdentity confirm={view.confirm} csrfToken={view.csrfToken} handle={view.account.handle} reason={t("account:emailChange.confirmReason")} errors={errorsFor("confirm").errors} />
          ) : (
            <RequestForm view={view} {...request} />
          )}
        </>
      )}
    </AccountShell>
  );
}

function ChangeForm({ view, sentTo, errors, values }: { view: EmailView; sentTo: string } & FormState) {
  const { t } = useT();
  return (
    <form method="post" noValidate className="flex max-w-md flex-col gap-4 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
      <SignedInFormFields csrfToken={view.csrfToken} />
      <input type="hidden" name="intent" value="change" />
      <p className="text-slate-700 dark:text-slate-200">
        {fill(t("account:emailChange.confirmIntro", { count: view.minutes, ...slots("email") }), { email: <Identifier text={sentTo} className="font-semibold" /> })}
      </p>
      <Field
        id="code"
        name="code"
        label={t("account:emailChange.code")}
        hint={t("account:emailChange.codeHint")}
        autoComplete="one-time-code"
        required
        maxLength={32}
        defaultValue={values.code ?? ""}
        error={errors.code}
        autoFocus={Boolean(errors.code)}
      />
      <button type="submit" className={`${primaryButton} self-start`}>
        {t("account:emailChange.submit")}
      </button>
    </form>
  );
}

function RequestForm({ view, errors, values }: { view: EmailView } & FormState) {
  const { t } = useT();
  return (
    <form method="post" noValidate className="flex max-w-md flex-col gap-4">
      <SignedInFormFields csrfToken={view.csrfToken} />
      <input type="hidden" name="intent" value="request" />
      <p className="text-slate-700 dark:text-slate-200">{view.pendingEmail ? t("account:emailChange.another") : t("account:emailChange.intro")}</p>
      <Field
        id="email"
        name="email"
        type="email"
        label={t("account:emailChange.newEmail")}
        autoComplete="email"
        required
        defaultValue={values.email ?? ""}
        error={errors.email}
        autoFocus={Boolean(errors.email)}
        invalid={Boolean(errors.form)}
        describedBy={errors.form ? "email-request-error" : undefined}
      />
      {errors.form ? <ErrorMessage id="email-request-error">{errors.form}</ErrorMessage> : null}
      <button type="submit" className={`${view.pendingEmail ? secondaryButton : primaryButton} self-start`}>
        {t("account:emailChange.send")}
      </button>
    </form>
  );
}
