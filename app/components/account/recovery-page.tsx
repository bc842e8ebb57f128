import type { RecoverView, ResetView } from "../../.server/screens/account/views";
import { CheckboxField } from "../ui/checkbox-field";
import { Field } from "../ui/field";
import { fill } from "../ui/fill";
import { slots, useT } from "../ui/i18n";
import { Identifier } from "../ui/identifier";
import { ActionNotice, ErrorMessage } from "../ui/messages";
import { linkStyle, primaryButton } from "../ui/styles";
import { NewPasswordFields } from "./new-password-fields";
import { SignedOutPage } from "./signed-out-page";

type Errors = { errors: Record<string, string>; values: Record<string, string> };

/** `returnTo`: the sign-in request the person came from; the way back then leads there instead of /account. */
function Frame({ title, intro, returnTo, children }: { title: string; intro?: string; returnTo?: string; children: React.ReactNode }) {
  const { t } = useT();
  return (
    <SignedOutPage title={title} intro={intro}>
      {children}
      <a href={returnTo ?? "/account"} className={`${linkStyle} self-start`}>
        {returnTo ? t("account:recovery.backToRequest") : t("account:recovery.backToSignIn")}
      </a>
    </SignedOutPage>
  );
}

/**
 * "Enter the code from the email" (docs/decisions/0030): for an email read on another device. A failed post comes back
 * with focus on the field to correct and its message tied to it.
 */
function CodeForm({ view, errors, values }: { view: RecoverView } & Errors) {
  const { t } = useT();
  const action = `/account/recover?${new URLSearchParams({ code: "1", ...(view.returnTo ? { return: view.returnTo } : {}) })}`;
  const focus = errors.identifier ? "identifier" : errors.code ? "code" : undefined;
  return (
    <section aria-labelledby="code-heading" className="flex flex-col gap-3">
      <h2 id="code-heading" className="text-lg font-semibold">
        {t("account:recovery.codeHeading")}
      </h2>
      <p className="text-slate-700 dark:text-slate-200">{t("account:recovery.codeIntro")}</p>
      <form method="post" action={action} className="flex flex-col gap-4" noValidate>
        <input type="hidden" name="csrf_token" value={view.csrfToken} />
        <input type="hidden" name="intent" value="code" />
        <Field
          id="code-identifier"
          name="identifier"
          label={t("account:recovery.identifier")}
          autoComplete="username"
          required
          defaultValue={values.identifier ?? view.identifier}
          error={errors.identifier}
          autoFocus={focus === "identifier"}
        />
        <Field
          id="code"
          name="code"
          label={t("account:recovery.code")}
          hint={t("account:recovery.codeHint")}
          autoComplete="one-time-code"
          required
          maxLength={32}
          defaultValue={values.code ?? ""}
          error={errors.code}
          autoFocus={focus === "code"}
        />
        <button type="submit" className={`${primaryButton} w-full`}>
          {t("account:recovery.codeSubmit")}
        </button>
      </form>
    </section>
  );
}

/** /account/recover: ask for a link; the answer never says whether an account matched (docs/decisions/0020). */
export function RecoverPage({ view, errors, values, code }: { view: RecoverView; code: Errors } & Errors) {
  const { t } = useT();
  if (!view.available) {
    return (
      <Frame title={t("account:recovery.title")} intro={t("account:recovery.noEmail")}>
        <p className="text-slate-700 dark:text-slate-200">
          {view.supportUrl
            ? fill(t("account:recovery.contactOperator", { service: view.serviceName, ...slots("link") }), {
                link: (
                  <a href={view.supportUrl} className={linkStyle}>
                    {t("account:recovery.supportLink")}
                  </a>
                ),
              })
            : t("account:recovery.contactOperatorNoLink", { service: view.serviceName })}
        </p>
      </Frame>
    );
  }
  if (view.sent) {
    return (
      <Frame title={t("account:recovery.sentTitle")} returnTo={view.returnTo}>
        <ActionNotice afterPost="keep">{t("account:recovery.sent", { count: view.minutes })}</ActionNotice>
        {view.returnTo ? <p className="text-slate-700 dark:text-slate-200">{t("account:recovery.sentReturn")}</p> : null}
        <CodeForm view={view} {...code} />
      </Frame>
    );
  }
  if (view.codeForm) {
    return (
      <Frame title={t("account:recovery.codeHeading")} returnTo={view.returnTo}>
        <CodeForm view={view} {...code} />
      </Frame>
    );
  }
  const formError = errors.form;
  return (
    <Frame title={t("account:recovery.title")} intro={t("account:recovery.intro")} returnTo={view.returnTo}>
      <form method="post" className="flex flex-col gap-4" noValidate>
        <input type="hidden" name="csrf_token" value={view.csrfToken} />
        {view.returnTo ? <input type="hidden" name="return" value={view.returnTo} /> : null}
        <Field
          id="identifier"
          name="identifier"
          label={t("account:recovery.identifier")}
          autoComplete="username"
          required
          defaultValue={values.identifier ?? ""}
          error={errors.identifier}
          invalid={Boolean(formError)}
          describedBy={formError ? "recover-error" : undefined}
        />
        {formError ? <ErrorMessage id="recover-error">{formError}</ErrorMessage> : null}
        <button type="submit" className={`${primaryButton} w-full`}>
          {t("account:recovery.send")}
        </button>
      </form>
      <a href={`/account/recover?${new URLSearchParams({ code: "1", ...(view.returnTo ? { return: view.returnTo } : {}) })}`} className={`${linkStyle} self-start`}>
        {t("account:recovery.haveCode")}
      </a>
    </Frame>
  );
}

/** /account/reset?code=…: a new password, and the offer to remove passkeys and disconnect apps. */
export function ResetPage({ view, errors }: { view: ResetView } & Errors) {
  const { t } = useT();
  // `link`: the server found the link spent or expired when the form was sent (answerReset).
  if (view.kind === "reset-invalid" || errors.link) {
    return (
      <Frame title={t("account:recovery.invalidTitle")} intro={t("account:recovery.invalidLink")}>
        <a href="/account/recover" className={`${primaryButton} w-full`}>
          {t("account:recovery.askAgain")}
        </a>
      </Frame>
    );
  }
  const formError = errors.form;
  return (
    <Frame title={t("account:recovery.resetTitle")} intro={t("account:recovery.resetIntro")}>
      {/* Which account the link resets: its reader may have several (issue 19). */}
      <p className="rounded-lg bg-slate-100 px-3 py-2 dark:bg-slate-800">
        {fill(t("account:recovery.resetFor", slots("handle")), { handle: <Identifier text={`@${view.handle}`} className="font-semibold" /> })}
      </p>
      <form method="post" className="flex flex-col gap-4" noValidate>
        <input type="hidden" name="csrf_token" value={view.csrfToken} />
        <input type="hidden" name="code" value={view.code} />
        {/* Lets password managers store the new password for the right account. */}
        <input type="text" name="username" autoComplete="username" defaultValue={view.handle} hidden readOnly />
        <NewPasswordFields minLength={view.minLength} errors={errors} focus={errors.new_password ? "new_password" : errors.confirm_password ? "confirm_password" : undefined} />
        <CheckboxField id="remove_passkeys" label={t("account:recovery.removePasskeys")} hint={t("account:recovery.removePasskeysHint")} />
        <CheckboxField id="disconnect_apps" label={t("account:recovery.disconnectApps")} hint={t("account:recovery.disconnectAppsHint")} />
        {formError ? <ErrorMessage id="reset-error">{formError}</ErrorMessage> : null}
        <button type="submit" className={`${primaryButton} w-full`}>
          {t("account:recovery.submit")}
        </button>
      </form>
    </Frame>
  );
}
