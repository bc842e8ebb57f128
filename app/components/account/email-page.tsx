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
  const confirmation = view.confirmation ? <ConfirmAddress view={view} confirmation={view.confirmation} {...errorsFor("email-confirmation")} /> : null;
  // While a new address waits for its code, that code's field comes first (within a phone's first screen); confirming
  // the current address, after it.
  const changing = Boolean(view.pendingEmail);
  return (
    <AccountShell base={view} current="/account/email" title={t("account:titles.email")}>
      <p className="text-slate-700 dark:text-slate-200">
        {fill(t("account:emailChange.current", slots("email")), { email: <Identifier text={view.email} className="font-semibold" /> })}
      </p>
      {changing ? null : confirmation}
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
      {changing ? confirmation : null}
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
      <CodeField id="code" label={t("account:emailChange.code")} errors={errors} values={values} />
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

/**
 * "Confirm your email address" (docs/decisions/0052), first on the page while the address is not confirmed: the code
 * sent at sign-up (or a new one) typed here. Without email on this server, it says so.
 */
function ConfirmAddress({ view, confirmation, errors, values }: { view: EmailView; confirmation: NonNullable<EmailView["confirmation"]> } & FormState) {
  const { t } = useT();
  const email = { email: <Identifier text={view.email} className="font-semibold" /> };
  return (
    <section id="confirm-email" aria-labelledby="confirm-email-heading" className="flex max-w-md flex-col gap-4 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
      <h2 id="confirm-email-heading" className="text-lg font-semibold">
        {t("account:emailConfirmation.title")}
      </h2>
      {!view.available ? (
        <p className="text-slate-700 dark:text-slate-200">{t("account:emailConfirmation.noEmail")}</p>
      ) : (
        <>
          <p className="text-slate-700 dark:text-slate-200">
            {fill(t(confirmation.codeSent ? "account:emailConfirmation.pending" : "account:emailConfirmation.intro", slots("email")), email)}
          </p>
          {confirmation.codeSent ? (
            <form method="post" noValidate className="flex flex-col gap-4">
              <SignedInFormFields csrfToken={view.csrfToken} />
              <input type="hidden" name="intent" value="confirmation-code" />
              <CodeField id="confirmation-code" label={t("account:emailConfirmation.code")} errors={errors} values={values} />
              <button type="submit" className={`${primaryButton} self-start`}>
                {t("account:emailConfirmation.submit")}
              </button>
            </form>
          ) : null}
          <form method="post" className="flex flex-col gap-2">
            <SignedInFormFields csrfToken={view.csrfToken} />
            <input type="hidden" name="intent" value="confirmation-request" />
            {errors.form ? <ErrorMessage id="confirmation-error">{errors.form}</ErrorMessage> : null}
            <button type="submit" className={`${confirmation.codeSent ? secondaryButton : primaryButton} self-start`}>
              {confirmation.codeSent ? t("account:emailConfirmation.resend") : t("account:emailConfirmation.send")}
            </button>
          </form>
        </>
      )}
    </section>
  );
}

/** The field of a code from the email (docs/decisions/0030): the new address's, or the current one's confirmation. */
function CodeField({ id, label, errors, values }: { id: string; label: string } & FormState) {
  const { t } = useT();
  return (
    <Field
      id={id}
      name="code"
      label={label}
      hint={t("account:emailChange.codeHint")}
      autoComplete="one-time-code"
      required
      maxLength={32}
      defaultValue={values.code ?? ""}
      error={errors.code}
      autoFocus={Boolean(errors.code)}
    />
  );
}
