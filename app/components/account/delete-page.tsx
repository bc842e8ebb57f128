import type { DeleteAccountView } from "../../.server/screens/account/views";
import { Field } from "../ui/field";
import { fill } from "../ui/fill";
import { slots, useT } from "../ui/i18n";
import { ErrorMessage, Warning } from "../ui/messages";
import { dangerButton, linkStyle, secondaryButton } from "../ui/styles";
import { AccountShell } from "./account-shell";
import { SignedInFormFields } from "./form-account";

type FormState = { errors: Record<string, string>; values: Record<string, string> };

/**
 * /account/delete (docs/decisions/0030): what deleting means, then a code by email, then the code and the password.
 * On a phone the step the person is at comes first after the warning; a refused field has the focus and its message
 * (autofocus and aria-describedby, with or without JavaScript). The forms post to the bare path, so that a refusal's
 * page does not repeat the "code sent" notice of the address it was shown at.
 */
export function DeletePage({ view, errorsFor }: { view: DeleteAccountView; errorsFor: (form: string) => FormState }) {
  const { t } = useT();
  const { errors, values } = errorsFor("delete");
  const failed = Object.keys(errors).length > 0;
  // A request for a code that had to wait (too many): said by the button that asked.
  const waitError = errorsFor("request").errors.form;
  return (
    <AccountShell base={view} current="/account/delete" title={t("account:titles.delete")}>
      <Warning>{t("account:deletion.warning", { handle: `@${view.account.handle}` })}</Warning>
      {!view.available ? (
        <NoEmail view={view} />
      ) : view.codeSent || failed ? (
        <ConfirmForm view={view} errors={errors} values={values} waitError={waitError} />
      ) : (
        <RequestForm view={view} waitError={waitError} />
      )}
      {/* After the step to take, which a phone shows first: what stays when the account goes (docs/decisions/0050). */}
      <p className="text-sm text-slate-700 dark:text-slate-200">{t("account:deletion.keepsIdentity", { did: view.account.did })}</p>
    </AccountShell>
  );
}

function NoEmail({ view }: { view: DeleteAccountView }) {
  const { t } = useT();
  return (
    <p className="text-slate-700 dark:text-slate-200">
      {view.supportUrl
        ? fill(t("account:deletion.noEmail", { service: view.serviceName, ...slots("link") }), {
            link: (
              <a href={view.supportUrl} className={linkStyle}>
                {t("account:recovery.supportLink")}
              </a>
            ),
          })
        : t("account:deletion.noEmailNoLink", { service: view.serviceName })}
    </p>
  );
}

function RequestForm({ view, waitError }: { view: DeleteAccountView; waitError?: string }) {
  const { t } = useT();
  return (
    <form method="post" action="/account/delete" className="flex max-w-md flex-col gap-3">
      <SignedInFormFields csrfToken={view.csrfToken} />
      <input type="hidden" name="intent" value="request" />
      <p className="text-slate-700 dark:text-slate-200">{t("account:deletion.requestIntro", { count: view.minutes })}</p>
      {waitError ? <ErrorMessage id="request-error">{waitError}</ErrorMessage> : null}
      <button type="submit" className={`${secondaryButton} self-start`} aria-describedby={waitError ? "request-error" : undefined} autoFocus={Boolean(waitError)}>
        {t("account:deletion.sendCode")}
      </button>
    </form>
  );
}

function ConfirmForm({ view, errors, values, waitError }: { view: DeleteAccountView; waitError?: string } & FormState) {
  const { t } = useT();
  const firstToCorrect = errors.code ? "code" : errors.password ? "password" : errors.endIdentity ? "endIdentity" : undefined;
  return (
    <>
      <form method="post" action="/account/delete" noValidate className="flex max-w-md flex-col gap-4 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
        <SignedInFormFields csrfToken={view.csrfToken} />
        <input type="hidden" name="intent" value="delete" />
        {/* Lets password managers offer the password of the right account. */}
        <input type="text" name="username" autoComplete="username" defaultValue={view.account.handle} hidden readOnly />
        <p className="text-slate-700 dark:text-slate-200">{t("account:deletion.confirmIntro", { count: view.minutes })}</p>
        <Field
          id="code"
          name="code"
          label={t("account:deletion.code")}
          hint={t("account:deletion.codeHint")}
          autoComplete="one-time-code"
          required
          maxLength={32}
          defaultValue={values.code ?? ""}
          error={errors.code}
          autoFocus={firstToCorrect === "code"}
        />
        <Field
          id="password"
          name="password"
          label={t("account:deletion.password")}
          type="password"
          autoComplete="current-password"
          required
          error={errors.password}
          autoFocus={firstToCorrect === "password"}
          invalid={Boolean(errors.form)}
          describedBy={errors.form ? "delete-error" : undefined}
        />
        {view.canEndIdentity ? <EndIdentity did={view.account.did} checked={values.endIdentity === "1"} error={errors.endIdentity} autoFocus={firstToCorrect === "endIdentity"} /> : null}
        {errors.form ? <ErrorMessage id="delete-error">{errors.form}</ErrorMessage> : null}
        <button type="submit" className={`${dangerButton} self-start`}>
          {t("account:deletion.submit")}
        </button>
      </form>
      <form method="post" action="/account/delete" className="flex flex-col gap-2">
        <SignedInFormFields csrfToken={view.csrfToken} />
        <input type="hidden" name="intent" value="request" />
        <p className="text-sm text-slate-600 dark:text-slate-300">{t("account:deletion.noCode")}</p>
        {waitError ? <ErrorMessage id="request-error">{waitError}</ErrorMessage> : null}
        <button type="submit" className={`${secondaryButton} self-start`} aria-describedby={waitError ? "request-error" : undefined} autoFocus={Boolean(waitError)}>
          {t("account:deletion.sendAgain")}
        </button>
      </form>
    </>
  );
}

/**
 * "Also end my identity for good" (docs/decisions/0050): offered only while this server's key is the DID's only
 * rotation key, unticked by default, with what it means said plainly beside it.
 */
function EndIdentity({ did, checked, error, autoFocus }: { did: string; checked: boolean; error?: string; autoFocus: boolean }) {
  const { t } = useT();
  const described = ["endIdentity-hint", error ? "endIdentity-error" : undefined].filter(Boolean).join(" ");
  return (
    <div className="flex items-start gap-3">
      <input
        id="endIdentity"
        name="endIdentity"
        type="checkbox"
        value="1"
        defaultChecked={checked}
        className="mt-1 size-5 shrink-0 accent-brand"
        aria-describedby={described}
        aria-invalid={error ? true : undefined}
        autoFocus={autoFocus}
      />
      <div className="flex flex-col gap-0.5">
        <label htmlFor="endIdentity" className="font-medium">
          {t("account:deletion.endIdentity")}
        </label>
        <p id="endIdentity-hint" className="text-sm text-slate-600 dark:text-slate-300">
          {t("account:deletion.endIdentityHint", { did })}
        </p>
        {error ? (
          <p id="endIdentity-error" className="text-sm text-red-800 dark:text-red-300">
            {error}
          </p>
        ) : null}
      </div>
    </div>
  );
}
