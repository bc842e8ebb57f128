import { useState } from "react";
import type { HandleView } from "../../.server/screens/account/views";
import { normalizeHandleName } from "../../lib/handle-name";
import { fill } from "../ui/fill";
import { Identifier } from "../ui/identifier";
import { Field } from "../ui/field";
import { slots, useT } from "../ui/i18n";
import { ErrorMessage } from "../ui/messages";
import { inputStyle, primaryButton } from "../ui/styles";
import { AccountShell } from "./account-shell";
import { ConfirmIdentity } from "./confirm-identity";
import { SignedInFormFields } from "./form-account";

type FormState = { errors: Record<string, string>; values: Record<string, string> };

type Props = { view: HandleView; errorsFor: (form: string) => FormState };

/**
 * /account/handle: the current handle, then the new one's name and domain. A refused name (taken, malformed) is said
 * under the field, which has the focus (autofocus: without JavaScript too) and names the message
 * (aria-describedby).
 */
export function HandlePage({ view, errorsFor }: Props) {
  const { t } = useT();
  const { errors, values } = errorsFor("handle");
  const single = view.domains.length === 1 ? view.domains[0] : undefined;
  // The full handle as it is typed (issue 28, borrowed from the reference): only with JavaScript; the form is the same.
  const [typed, setTyped] = useState(values.name ?? "");
  const [domain, setDomain] = useState(values.domain ?? view.domains[0] ?? "");
  const preview = normalizeHandleName(typed);
  // With one domain there is no domain field: a refused domain (a form posted from elsewhere) is the form's error.
  const formError = errors.form ?? (single ? errors.domain : undefined);
  const focus = errors.name || formError ? "name" : errors.domain ? "domain" : undefined;
  return (
    <AccountShell base={view} current="/account/handle" title={t("account:titles.handle")} intro={t("account:handle.current", { handle: view.account.handle })}>
      {view.confirm ? (
        <ConfirmIdentity confirm={view.confirm} csrfToken={view.csrfToken} handle={view.account.handle} reason={t("account:handle.confirmReason")} errors={errorsFor("confirm").errors} />
      ) : (
        <form method="post" noValidate className="flex max-w-md flex-col gap-4 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
          <SignedInFormFields csrfToken={view.csrfToken} />
          <input type="hidden" name="intent" value="change" />
          <Field
            id="name"
            name="name"
            label={t("account:handle.name")}
            autoComplete="off"
            required
            maxLength={view.limits.max}
            defaultValue={values.name}
            error={errors.name}
            hint={single ? t("account:handle.hintOne", { domain: single, ...view.limits }) : t("account:handle.hint", view.limits)}
            describedBy={formError ? "handle-form-error" : undefined}
            invalid={Boolean(formError)}
            autoFocus={focus === "name"}
            onChange={(event) => setTyped(event.target.value)}
            below={
              preview ? (
                <p id="handle-preview" className="text-sm text-slate-700 dark:text-slate-200">
                  {fill(t("account:handle.preview", slots("handle")), { handle: <Identifier text={`@${preview}${single ?? domain}`} className="font-semibold" /> })}
                </p>
              ) : null
            }
          />
          {single ? (
            <input type="hidden" name="domain" value={single} />
          ) : (
            <div className="flex flex-col gap-1">
              <label htmlFor="domain" className="font-medium">
                {t("account:handle.domain")}
              </label>
              <select
                id="domain"
                name="domain"
                defaultValue={values.domain ?? view.domains[0]}
                onChange={(event) => setDomain(event.target.value)}
                className={inputStyle}
                aria-invalid={errors.domain ? true : undefined}
                aria-describedby={errors.domain ? "domain-error" : undefined}
                autoFocus={focus === "domain"}
              >
                {view.domains.map((domain) => (
                  <option key={domain} value={domain}>
                    {domain}
                  </option>
                ))}
              </select>
              {errors.domain ? (
                <p id="domain-error" className="text-sm text-red-800 dark:text-red-300">
                  {errors.domain}
                </p>
              ) : null}
            </div>
          )}
          {formError ? <ErrorMessage id="handle-form-error">{formError}</ErrorMessage> : null}
          <p className="text-sm text-slate-700 dark:text-slate-200">{t("account:handle.whatChanges")}</p>
          <button type="submit" className={`${primaryButton} self-start`}>
            {t("account:handle.submit")}
          </button>
        </form>
      )}
    </AccountShell>
  );
}
