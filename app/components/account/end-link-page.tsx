import type { EndLinkView } from "../../.server/screens/account/end-link-page";
import { DateTime } from "../ui/date-time";
import { Field } from "../ui/field";
import { useT } from "../ui/i18n";
import { dangerButton, linkStyle, mutedText, primaryButton } from "../ui/styles";
import { SignedOutPage } from "./signed-out-page";

type Errors = { errors: Record<string, string> };

/**
 * /account/end: the one-click link of a new-sign-in or new-app email (docs/decisions/0056). What would end, for which
 * account, and one form: sign in as it, confirm it's you, or the button. Plain forms: no JavaScript needed.
 */
export function EndLinkPage({ view, errors }: { view: EndLinkView } & Errors) {
  const { t } = useT();
  if (view.kind === "end-link-gone") {
    return (
      <SignedOutPage title={t("account:signInNotices.end.title")} intro={t(`account:signInNotices.end.${view.reason}`)}>
        <p>{t("account:signInNotices.end.elsewhere")}</p>
        <a href="/account" className={`${primaryButton} w-full`}>
          {t("account:signInNotices.end.toAccount")}
        </a>
      </SignedOutPage>
    );
  }
  if (view.kind === "end-link-done") {
    return (
      <SignedOutPage title={t("account:signInNotices.end.title")} intro={view.what === "browser" ? t("account:signInNotices.end.endedSession") : t("account:signInNotices.end.endedApp")}>
        <p>{t("account:signInNotices.end.advice")}</p>
        <a href="/account/password" className={`${primaryButton} w-full`}>
          {t("account:signInNotices.end.changePassword")}
        </a>
        <a href="/account" className={`${linkStyle} self-start`}>
          {t("account:signInNotices.end.toAccount")}
        </a>
      </SignedOutPage>
    );
  }
  const session = view.what === "browser";
  const passwordError = errors.password ?? errors.form;
  return (
    <SignedOutPage title={session ? t("account:signInNotices.end.sessionHeading") : t("account:signInNotices.end.appHeading")}>
      <p id="end-what" className="break-words">
        {session ? t("account:signInNotices.end.sessionWhat", { browser: view.name, handle: view.handle }) : t("account:signInNotices.end.appWhat", { app: view.name, handle: view.handle })}
      </p>
      <dl className="grid grid-cols-[auto_1fr] gap-x-3 gap-y-0.5 text-sm">
        <dt className={mutedText}>{t("account:signInNotices.end.sentAt")}</dt>
        <dd>
          <DateTime iso={view.sentAt} />
        </dd>
      </dl>
      <form method="post" action={`/account/end?${new URLSearchParams({ token: view.token })}`} className="flex flex-col gap-4" noValidate>
        <input type="hidden" name="csrf_token" value={view.csrfToken} />
        <input type="hidden" name="token" value={view.token} />
        {view.step === "end" ? (
          <>
            <input type="hidden" name="intent" value="end" />
            <button type="submit" className={`${dangerButton} w-full`} aria-describedby="end-what">
              {session ? t("account:signInNotices.end.sessionButton") : t("account:signInNotices.end.appButton")}
            </button>
          </>
        ) : (
          <>
            <input type="hidden" name="intent" value={view.step === "sign-in" ? "sign_in" : "confirm"} />
            <p className="break-words">{view.step === "sign-in" ? t("account:signInNotices.end.signIn", { handle: view.handle }) : t("account:signInNotices.end.confirm", { handle: view.handle })}</p>
            {/* Lets password managers fill the password of the right account. */}
            <input type="text" name="username" autoComplete="username" defaultValue={view.handle} hidden readOnly />
            <Field id="end-password" name="password" type="password" label={t("account:signInNotices.end.password")} autoComplete="current-password" error={passwordError} autoFocus={Boolean(passwordError)} />
            <button type="submit" className={`${primaryButton} w-full`}>
              {view.step === "sign-in" ? t("account:signInNotices.end.signInButton") : t("account:signInNotices.end.confirmButton")}
            </button>
          </>
        )}
      </form>
    </SignedOutPage>
  );
}
