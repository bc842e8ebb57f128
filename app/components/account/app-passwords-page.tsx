import { ConfirmForm, SignedInFormFields } from "./form-account";
import type { AppPasswordsView, AppPasswordView, CreatedAppPasswordView } from "../../.server/screens/account/views";
import { DateTime } from "../ui/date-time";
import { Field } from "../ui/field";
import { useT } from "../ui/i18n";
import { ErrorMessage, Warning } from "../ui/messages";
import { dangerButton, linkStyle, primaryButton, secondaryButton, smallButton } from "../ui/styles";
import { AccountShell } from "./account-shell";
import { ConfirmIdentity } from "./confirm-identity";

type FormErrors = { errors: Record<string, string>; values: Record<string, string> };
type Props = { view: AppPasswordsView; created?: CreatedAppPasswordView; errorsFor: (form: string) => FormErrors };

const PATH = "/account/app-passwords";

/**
 * /account/app-passwords (docs/decisions/0047): the new password once, right after it is made; the list with Revoke
 * (confirmed on a second step); the form that makes one, or "Confirm it's you" first; the emailed sign-in code.
 * Plain forms: no JavaScript needed.
 */
export function AppPasswordsPage({ view, created, errorsFor }: Props) {
  const { t } = useT();
  if (view.revoking) return <ConfirmRevoke view={view} appPassword={view.revoking} />;
  const confirmErrors = errorsFor("confirm").errors;
  return (
    <AccountShell base={view} current={PATH} title={t("account:titles.appPasswords")} intro={t("account:appPasswords.intro")}>
      {created ? <CreatedPassword created={created} /> : null}
      {view.enabled ? null : <Warning>{t("account:appPasswords.off")}</Warning>}
      <AppPasswordList view={view} />
      {view.confirm ? (
        <ConfirmIdentity confirm={view.confirm} csrfToken={view.csrfToken} handle={view.account.handle} reason={t("account:appPasswords.confirmReason")} errors={confirmErrors} />
      ) : view.enabled ? (
        <CreateForm view={view} form={errorsFor("app-password-create")} />
      ) : null}
      <SignInCode view={view} form={errorsFor("sign-in-code")} />
    </AccountShell>
  );
}

/** The password, shown this once, ready to select and copy. */
function CreatedPassword({ created }: { created: CreatedAppPasswordView }) {
  const { t } = useT();
  return (
    <section aria-labelledby="created-heading" className="flex flex-col gap-3 rounded-2xl border border-emerald-300 bg-emerald-50 p-5 text-emerald-950 dark:border-emerald-800 dark:bg-emerald-950 dark:text-emerald-50">
      <h2 id="created-heading" className="text-lg font-semibold">
        {t("account:appPasswords.created.title")}
      </h2>
      <p>{t("account:appPasswords.created.intro", { name: created.name, handle: `@${created.handle}` })}</p>
      {/* Focused on arrival: its label and value are what a screen reader reads first. */}
      <Field id="created-password" name="created-password" label={t("account:appPasswords.created.label", { name: created.name })} defaultValue={created.password} readOnly autoFocus />
      <a href={PATH} className={`${linkStyle} self-start`}>
        {t("account:appPasswords.created.done")}
      </a>
    </section>
  );
}

function AppPasswordList({ view }: { view: AppPasswordsView }) {
  const { t } = useT();
  return (
    <section aria-labelledby="list-heading" className="flex flex-col gap-3">
      <h2 id="list-heading" className="text-xl font-semibold">
        {t("account:appPasswords.list.title")}
      </h2>
      {view.appPasswords.length === 0 ? (
        <p className="rounded-2xl border border-dashed border-slate-300 p-6 text-slate-700 dark:border-slate-700 dark:text-slate-200">{t("account:appPasswords.list.none")}</p>
      ) : (
        <ul className="flex flex-col gap-3">
          {view.appPasswords.map((appPassword, index) => (
            <li key={appPassword.id}>
              <AppPasswordItem appPassword={appPassword} index={index} />
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function AppPasswordItem({ appPassword, index }: { appPassword: AppPasswordView; index: number }) {
  const { t } = useT();
  const headingId = `app-password-${index}`;
  return (
    <article aria-labelledby={headingId} className="flex flex-col gap-3 rounded-2xl border border-slate-200 bg-white p-5 sm:flex-row sm:items-start sm:justify-between dark:border-slate-800 dark:bg-slate-900">
      <div className="flex min-w-0 flex-col gap-1">
        <h3 id={headingId} className="text-lg font-semibold break-words">
          {appPassword.name}
        </h3>
        {appPassword.privileged ? <p className="text-sm font-medium">{t("account:appPasswords.list.privileged")}</p> : null}
        <dl className="grid grid-cols-[auto_1fr] gap-x-3 gap-y-0.5 text-sm">
          <dt className="text-slate-600 dark:text-slate-300">{t("account:appPasswords.list.created")}</dt>
          <dd>
            <DateTime iso={appPassword.createdAt} />
          </dd>
          <dt className="text-slate-600 dark:text-slate-300">{t("account:appPasswords.list.lastUsed")}</dt>
          <dd>{appPassword.lastUsedAt ? <DateTime iso={appPassword.lastUsedAt} /> : t("account:appPasswords.list.notYet")}</dd>
        </dl>
      </div>
      <div className="flex shrink-0 flex-wrap items-center gap-2">
        {/* What its apps did, and Take back chat access for a privileged one (docs/decisions/0053). */}
        <a href={appPassword.pagePath} className={`${linkStyle} text-sm`} aria-describedby={headingId}>
          {t("account:appPasswords.list.details")}
        </a>
        {/* A second step, not the revocation itself: the confirmation says what ends (no JavaScript needed). */}
        <form method="get">
          <input type="hidden" name="revoke" value={appPassword.name} />
          <button type="submit" className={`${dangerButton} ${smallButton}`} aria-describedby={headingId}>
            {t("account:appPasswords.list.revoke")}
          </button>
        </form>
      </div>
    </article>
  );
}

function CreateForm({ view, form }: { view: AppPasswordsView; form: FormErrors }) {
  const { t } = useT();
  const formError = form.errors.form;
  return (
    <section aria-labelledby="create-heading" className="flex flex-col gap-4 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
      <h2 id="create-heading" className="text-lg font-semibold">
        {t("account:appPasswords.create.title")}
      </h2>
      <form method="post" noValidate className="flex flex-col gap-4">
        <SignedInFormFields csrfToken={view.csrfToken} />
        <input type="hidden" name="intent" value="create" />
        <Field
          id="app-password-name"
          name="name"
          label={t("account:appPasswords.create.name")}
          hint={t("account:appPasswords.create.nameHint", { count: view.nameMaxLength })}
          required
          maxLength={view.nameMaxLength}
          autoComplete="off"
          defaultValue={form.values.name}
          error={form.errors.name}
          autoFocus={Boolean(form.errors.name)}
        />
        <div className="flex items-start gap-3">
          <input
            id="app-password-privileged"
            name="privileged"
            type="checkbox"
            value="1"
            defaultChecked={form.values.privileged === "1"}
            aria-describedby="app-password-privileged-hint"
            className="mt-1 size-5 shrink-0 accent-brand"
          />
          <div className="flex flex-col gap-0.5">
            <label htmlFor="app-password-privileged" className="font-medium">
              {t("account:appPasswords.create.privileged")}
            </label>
            <p id="app-password-privileged-hint" className="text-sm text-slate-600 dark:text-slate-300">
              {t("account:appPasswords.create.privilegedHint")}
            </p>
          </div>
        </div>
        {formError ? <ErrorMessage>{formError}</ErrorMessage> : null}
        <button type="submit" className={`${primaryButton} self-start`}>
          {t("account:appPasswords.create.submit")}
        </button>
      </form>
    </section>
  );
}

/** The emailed code that password sessions on the account's own password need, when on (com.atproto's authFactorToken). */
function SignInCode({ view, form }: { view: AppPasswordsView; form: FormErrors }) {
  const { t } = useT();
  const { on, available, email } = view.signInCode;
  const formError = form.errors.form;
  return (
    <section aria-labelledby="sign-in-code-heading" className="flex flex-col gap-3 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
      <h2 id="sign-in-code-heading" className="text-lg font-semibold">
        {t("account:appPasswords.signInCode.title")}
      </h2>
      <p>{on ? t("account:appPasswords.signInCode.on", { email }) : t("account:appPasswords.signInCode.off")}</p>
      <p className="text-sm text-slate-600 dark:text-slate-300">{t("account:appPasswords.signInCode.explain")}</p>
      {!on && !available ? <p className="text-sm">{t("account:appPasswords.signInCode.noEmail")}</p> : null}
      {formError ? <ErrorMessage>{formError}</ErrorMessage> : null}
      {view.confirm ? (
        <p className="text-sm text-slate-600 dark:text-slate-300">{t("account:appPasswords.signInCode.confirmFirst")}</p>
      ) : on || available ? (
        <form method="post">
          <SignedInFormFields csrfToken={view.csrfToken} />
          <input type="hidden" name="intent" value="sign-in-code" />
          <input type="hidden" name="on" value={on ? "0" : "1"} />
          <button type="submit" className={`${secondaryButton} self-start`}>
            {on ? t("account:appPasswords.signInCode.turnOff") : t("account:appPasswords.signInCode.turnOn")}
          </button>
        </form>
      ) : null}
    </section>
  );
}

/** "Revoke this app password?": what ends, and the two buttons; Cancel is a link back, so both work without JavaScript. */
function ConfirmRevoke({ view, appPassword }: { view: AppPasswordsView; appPassword: AppPasswordView }) {
  const { t } = useT();
  return (
    <AccountShell base={view} current={PATH} title={t("account:appPasswords.confirm.title")}>
      <section aria-labelledby="revoke-question" className="flex flex-col gap-4 rounded-2xl border border-red-300 bg-white p-5 dark:border-red-800 dark:bg-slate-900">
        <h2 id="revoke-question" className="text-lg font-semibold break-words">
          {appPassword.name}
        </h2>
        <ConfirmForm
          effects={[t("account:appPasswords.confirm.signsOut"), t("account:appPasswords.confirm.noSignIn")]}
          effectsId="revoke-ends"
          csrfToken={view.csrfToken}
          fields={{ intent: "revoke", name: appPassword.name }}
          submit={t("account:appPasswords.confirm.submit")}
          cancel={t("account:appPasswords.confirm.cancel")}
          cancelHref={PATH}
        />
      </section>
    </AccountShell>
  );
}
