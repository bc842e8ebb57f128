import type { DeactivateView } from "../../.server/screens/account/views";
import { DateTime } from "../ui/date-time";
import { fill } from "../ui/fill";
import { slots, useT } from "../ui/i18n";
import { ErrorMessage } from "../ui/messages";
import { dangerButton, linkStyle, primaryButton } from "../ui/styles";
import { AccountShell } from "./account-shell";
import { ConfirmIdentity } from "./confirm-identity";
import { SignedInFormFields } from "./form-account";

type FormState = { errors: Record<string, string>; values: Record<string, string> };

type Props = { view: DeactivateView; errorsFor: (form: string) => FormState };

/**
 * /account/deactivate (docs/decisions/0031): on a phone, what deactivating does and its button come first, in plain
 * words (nothing is deleted; the network stops serving the data; apps lose access until reactivation; how to come
 * back). For a deactivated account: since when, and Reactivate.
 */
export function DeactivatePage({ view, errorsFor }: Props) {
  const { t } = useT();
  const deactivated = view.deactivatedSince !== undefined;
  const status = errorsFor("status").errors;
  return (
    <AccountShell base={view} current="/account/deactivate" title={deactivated ? t("account:deactivate.titleDeactivated") : t("account:titles.deactivate")}>
      {/* The title says the state once; the card says since when and what reactivating does (issue 28, item 21). */}
      <div className="flex max-w-xl flex-col gap-4 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
        {deactivated ? (
          <p>
            {fill(t("account:deactivate.since", slots("time")), { time: <DateTime iso={view.deactivatedSince!} /> })} {t("account:deactivate.reactivateExplained")}
          </p>
        ) : (
          <ul className="flex list-disc flex-col gap-2 pl-5">
            <li>{t("account:deactivate.keeps")}</li>
            <li>{t("account:deactivate.network")}</li>
            <li>{t("account:deactivate.apps")}</li>
            <li>{t("account:deactivate.comeBack")}</li>
          </ul>
        )}
        {status.form ? <ErrorMessage id="status-error">{status.form}</ErrorMessage> : null}
        {view.confirm ? null : (
          <form method="post" className="flex flex-wrap items-center gap-4">
            <SignedInFormFields csrfToken={view.csrfToken} />
            <input type="hidden" name="intent" value={deactivated ? "reactivate" : "deactivate"} />
            <button type="submit" className={deactivated ? primaryButton : dangerButton} aria-describedby={status.form ? "status-error" : undefined}>
              {deactivated ? t("account:deactivate.reactivate") : t("account:deactivate.submit")}
            </button>
            {deactivated ? null : (
              <a href="/account" className={linkStyle}>
                {t("account:deactivate.cancel")}
              </a>
            )}
          </form>
        )}
      </div>
      {view.confirm ? (
        <ConfirmIdentity
          confirm={view.confirm}
          csrfToken={view.csrfToken}
          handle={view.account.handle}
          reason={deactivated ? t("account:deactivate.confirmReactivate") : t("account:deactivate.confirmDeactivate")}
          errors={errorsFor("confirm").errors}
        />
      ) : null}
    </AccountShell>
  );
}
