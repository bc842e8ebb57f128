import { SignedInFormFields } from "./form-account";
import type { PasskeysView, PasskeyView } from "../../.server/screens/account/views";
import { AddPasskey } from "../passkey/add-passkey";
import { DateTime } from "../ui/date-time";
import { useT } from "../ui/i18n";
import { Field } from "../ui/field";
import { dangerButton, secondaryButton, smallButton, summaryStyle } from "../ui/styles";
import { AccountShell } from "./account-shell";
import { ConfirmIdentity } from "./confirm-identity";

type Props = { view: PasskeysView; errorsFor: (form: string) => { errors: Record<string, string>; values: Record<string, string> } };

/** /account/passkeys: list, add (after "Confirm it's you" when the last one is not recent), rename, delete. */
export function PasskeysPage({ view, errorsFor }: Props) {
  const register = errorsFor("register");
  const { t } = useT();
  return (
    <AccountShell base={view} current="/account/passkeys" title={t("account:titles.passkeys")} intro={t("account:passkeys.intro")}>
      {view.passkeys.length === 0 ? (
        <p className="rounded-2xl border border-dashed border-slate-300 p-6 text-slate-700 dark:border-slate-700 dark:text-slate-200">{t("account:passkeys.none")}</p>
      ) : (
        <ul className="flex flex-col gap-3">
          {view.passkeys.map((passkey, index) => (
            <li key={passkey.credentialId}>
              <PasskeyItem passkey={passkey} index={index} csrfToken={view.csrfToken} nameMaxLength={view.nameMaxLength} rename={errorsFor(`rename:${passkey.credentialId}`)} />
            </li>
          ))}
        </ul>
      )}
      {view.confirm ? (
        <ConfirmIdentity
          confirm={view.confirm}
          csrfToken={view.csrfToken}
          handle={view.account.handle}
          reason={t("account:passkeys.confirmReason")}
          errors={errorsFor("confirm").errors}
        />
      ) : (
        <AddPasskey csrfToken={view.csrfToken} nameMaxLength={view.nameMaxLength} error={register.errors.name ?? register.errors.form} name={register.values.name} />
      )}
    </AccountShell>
  );
}

type ItemProps = {
  passkey: PasskeyView;
  index: number;
  csrfToken: string;
  nameMaxLength: number;
  rename: { errors: Record<string, string>; values: Record<string, string> };
};

function PasskeyItem({ passkey, index, csrfToken, nameMaxLength, rename }: ItemProps) {
  const headingId = `passkey-${index}`;
  const { t } = useT();
  return (
    <article aria-labelledby={headingId} className="flex flex-col gap-3 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
      <div className="flex flex-wrap items-start justify-between gap-3">
        <div className="min-w-0">
          <h2 id={headingId} className="text-lg font-semibold break-words">
            {passkey.name}
          </h2>
          <dl className="grid grid-cols-[auto_1fr] gap-x-3 gap-y-0.5 text-sm">
            <dt className="text-slate-600 dark:text-slate-300">{t("account:passkeys.added")}</dt>
            <dd>
              <DateTime iso={passkey.createdAt} />
            </dd>
            <dt className="text-slate-600 dark:text-slate-300">{t("account:passkeys.lastUsed")}</dt>
            <dd>{passkey.lastUsedAt ? <DateTime iso={passkey.lastUsedAt} /> : t("account:passkeys.never")}</dd>
            <dt className="text-slate-600 dark:text-slate-300">{t("account:passkeys.synced")}</dt>
            <dd>{passkey.backedUp ? t("account:passkeys.syncedYes") : t("account:passkeys.syncedNo")}</dd>
          </dl>
        </div>
        <form method="post">
          <SignedInFormFields csrfToken={csrfToken} />
          <input type="hidden" name="intent" value="delete" />
          <input type="hidden" name="credential_id" value={passkey.credentialId} />
          <button type="submit" className={`${dangerButton} ${smallButton}`} aria-describedby={headingId}>
            {t("account:passkeys.delete")}
          </button>
        </form>
      </div>
      <details open={Boolean(rename.errors.name)} className="text-sm">
        <summary className={summaryStyle}>
          {t("account:passkeys.rename")}
          <span className="sr-only"> {passkey.name}</span>
        </summary>
        <form method="post" noValidate className="mt-3 flex flex-col gap-3 sm:flex-row sm:items-end">
          <SignedInFormFields csrfToken={csrfToken} />
          <input type="hidden" name="intent" value="rename" />
          <input type="hidden" name="credential_id" value={passkey.credentialId} />
          <div className="flex-1">
            <Field id={`rename-${index}`} name="name" label={t("account:passkeys.newName")} required maxLength={nameMaxLength} defaultValue={rename.values.name ?? passkey.name} error={rename.errors.name} />
          </div>
          <button type="submit" className={`${secondaryButton} ${smallButton} min-h-11`}>
            {t("account:passkeys.saveName")}
          </button>
        </form>
      </details>
    </article>
  );
}
