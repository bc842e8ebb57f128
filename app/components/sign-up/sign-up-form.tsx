import { useState } from "react";
import type { SignUpView } from "../../.server/screens/sign-up/sign-up-page";
import { DomainSelect } from "../ui/domain-select";
import { Field } from "../ui/field";
import { fill } from "../ui/fill";
import { slots, useT } from "../ui/i18n";
import { Identifier } from "../ui/identifier";
import { ErrorMessage } from "../ui/messages";
import { linkStyle, mutedText, primaryButton } from "../ui/styles";
import { CaptchaWidget } from "./captcha-widget";
import { passwordStrength } from "./password-strength";

/**
 * The sign-up form's two steps (docs/decisions/0052), plain form posts that work without JavaScript: the handle, then
 * the rest. A refused field has the focus and its message under it (aria-describedby), with or without JavaScript.
 */
export function SignUpForm({ view }: { view: SignUpView }) {
  const { t } = useT();
  return (
    <div className="flex flex-col gap-4">
      <p className={`text-sm ${mutedText}`}>{t("account:signUp.stepOf", { step: view.step === "handle" ? 1 : 2, steps: 2 })}</p>
      {view.step === "handle" ? <HandleStep view={view} /> : <DetailsStep view={view} />}
      <p className={`text-sm ${mutedText}`}>
        {t("account:signUp.haveAccount")}{" "}
        <a href={view.links.signIn} className={linkStyle}>
          {t("account:signUp.signIn")}
        </a>
      </p>
    </div>
  );
}

function HiddenFields({ view, intent }: { view: SignUpView; intent: string }) {
  return (
    <>
      <input type="hidden" name="csrf_token" value={view.csrfToken} />
      {Object.entries(view.hidden).map(([name, value]) => (
        <input key={name} type="hidden" name={name} value={value} />
      ))}
      <input type="hidden" name="intent" value={intent} />
    </>
  );
}

/** The first field a refusal names: it has the focus on arrival. */
function firstRefused(view: SignUpView): string | undefined {
  return ["name", "domain", "email", "password", "inviteCode", "recoveryKey", "captcha"].find((field) => view.errors[field]);
}

function HandleStep({ view }: { view: SignUpView }) {
  const { t } = useT();
  return (
    <form method="post" action={view.action} noValidate className="flex flex-col gap-4">
      <HiddenFields view={view} intent="sign-up-handle" />
      <HandleFields view={view} focus={firstRefused(view) ?? "name"} />
      {view.errors.form ? <ErrorMessage id="sign-up-error">{view.errors.form}</ErrorMessage> : null}
      <button type="submit" className={`${primaryButton} w-full`}>
        {t("account:signUp.next")}
      </button>
    </form>
  );
}

/** The name in front of one of this server's domains (a choice of domain only when there are several). */
function HandleFields({ view, focus }: { view: SignUpView; focus?: string }) {
  const { t } = useT();
  const single = view.domains.length === 1 ? view.domains[0] : undefined;
  const nameError = view.errors.name ?? (single ? view.errors.domain : undefined);
  return (
    <>
      <Field
        id="name"
        name="name"
        label={t("account:signUp.handle")}
        autoComplete="username"
        required
        maxLength={view.limits.max}
        defaultValue={view.values.name ?? ""}
        error={nameError}
        hint={single ? t("account:signUp.handleHintOne", { domain: single, ...view.limits }) : t("account:signUp.handleHint", view.limits)}
        autoFocus={focus === "name"}
      />
      {single ? (
        <input type="hidden" name="domain" value={single} />
      ) : (
        <DomainSelect label={t("account:signUp.domain")} domains={view.domains} value={view.values.domain} error={view.errors.domain} autoFocus={focus === "domain"} />
      )}
    </>
  );
}

function DetailsStep({ view }: { view: SignUpView }) {
  const { t } = useT();
  const focus = firstRefused(view);
  const [strength, setStrength] = useState<ReturnType<typeof passwordStrength>>();
  const recoveryOpen = Boolean(view.values.recoveryKey || view.errors.recoveryKey);
  return (
    <form method="post" action={view.action} noValidate className="flex flex-col gap-4">
      <HiddenFields view={view} intent="sign-up" />
      {view.editHandle ? (
        <HandleFields view={view} focus={focus} />
      ) : (
        <p className="flex flex-wrap items-baseline gap-x-3">
          <span>{fill(t("account:signUp.yourHandle", slots("handle")), { handle: <Identifier text={`@${view.handle ?? ""}`} className="font-semibold" /> })}</span>
          <a href={view.links.changeHandle} className={`${linkStyle} text-sm`}>
            {t("account:signUp.changeHandle")}
          </a>
          <input type="hidden" name="name" value={view.values.name ?? ""} />
          <input type="hidden" name="domain" value={view.values.domain ?? ""} />
        </p>
      )}
      <Field
        id="email"
        name="email"
        type="email"
        label={t("account:signUp.email")}
        autoComplete="email"
        required
        maxLength={254}
        defaultValue={view.values.email ?? ""}
        error={view.errors.email}
        hint={t("account:signUp.emailHint")}
        autoFocus={focus === "email" || (!focus && !view.editHandle)}
      />
      <Field
        id="password"
        name="password"
        type="password"
        label={t("account:signUp.password")}
        autoComplete="new-password"
        required
        minLength={view.password.min}
        maxLength={view.password.max}
        error={view.errors.password}
        hint={t("account:signUp.passwordHint", { count: view.password.min })}
        describedBy={strength ? "password-strength" : undefined}
        autoFocus={focus === "password"}
        onChange={(event) => setStrength(passwordStrength(event.target.value, view.password.min))}
      />
      {/* Once JavaScript runs, as the person types; announced politely, after the field's own words. */}
      <p id="password-strength" aria-live="polite" className={`text-sm ${mutedText} ${strength ? "-mt-3" : "-mt-4"}`}>
        {strength ? t("account:signUp.strength.label", { level: t(`account:signUp.strength.${strength}`) }) : null}
      </p>
      {view.inviteRequired ? (
        <Field
          id="inviteCode"
          name="invite_code"
          label={t("account:signUp.inviteCode")}
          autoComplete="off"
          required
          maxLength={128}
          defaultValue={view.values.inviteCode ?? ""}
          error={view.errors.inviteCode}
          hint={t("account:signUp.inviteHint", { example: view.inviteExample })}
          autoFocus={focus === "inviteCode"}
        />
      ) : null}
      <details open={recoveryOpen} className="rounded-lg border-slate-200 open:border open:p-3 dark:border-slate-700">
        <summary className="cursor-pointer font-medium">{t("account:signUp.recovery.summary")}</summary>
        <div className="mt-3 flex flex-col gap-3">
          <p className={`text-sm ${mutedText}`}>{t("account:signUp.recovery.text")}</p>
          <Field
            id="recoveryKey"
            name="recovery_key"
            label={t("account:signUp.recovery.label")}
            autoComplete="off"
            maxLength={256}
            defaultValue={view.values.recoveryKey ?? ""}
            error={view.errors.recoveryKey}
            autoFocus={focus === "recoveryKey"}
          />
        </div>
      </details>
      {view.captchaSiteKey ? <CaptchaWidget siteKey={view.captchaSiteKey} error={view.errors.captcha} /> : null}
      {view.errors.form ? <ErrorMessage id="sign-up-error">{view.errors.form}</ErrorMessage> : null}
      <button type="submit" className={`${primaryButton} w-full`} aria-describedby={view.links.terms || view.links.privacy ? "sign-up-agreement" : undefined}>
        {t("account:signUp.submit")}
      </button>
      {/* Right under the button it speaks for (and read with it): above it, it pushed the button off a phone's first screen. */}
      <Agreement view={view} />
    </form>
  );
}

/** The operator's terms and privacy policy, when set (ATRIUM_TERMS_URL, ATRIUM_PRIVACY_URL). */
function Agreement({ view }: { view: SignUpView }) {
  const { t } = useT();
  const { terms, privacy } = view.links;
  if (!terms && !privacy) return null;
  const link = (href: string, label: string) => (
    // In a new tab, so that what was typed here stays.
    <a href={href} className={linkStyle} target="_blank" rel="noopener noreferrer">
      {label}
      <span className="sr-only"> {t("common:brand.newTab")}</span>
    </a>
  );
  const parts = { terms: terms ? link(terms, t("account:signUp.terms")) : null, privacy: privacy ? link(privacy, t("account:signUp.privacy")) : null };
  const key = terms && privacy ? "account:signUp.agreeBoth" : terms ? "account:signUp.agreeTerms" : "account:signUp.agreePrivacy";
  return (
    <p id="sign-up-agreement" className={`-mt-2 text-sm ${mutedText}`}>
      {fill(t(key, slots("terms", "privacy")), parts)}
    </p>
  );
}
