import type { DeletionEmail } from "../accounts/account-deletion.ts";
import type { ConfirmationEmail } from "../accounts/email-confirmation.ts";
import type { SignInCodeEmail } from "../accounts/email-auth-factor.ts";
import type { EmailUpdateEmails } from "../accounts/email-update.ts";
import type { RecoveryEmail } from "../accounts/password-recovery.ts";
import type { KeyAddedEmail } from "../identity/own-keys.ts";
import type { PlcOperationEmail } from "../identity/plc-operations.ts";
import type { NewAppEmail, NewBrowserEmail, NoticeValues } from "../notices/sign-in-notices.ts";
import { describeUserAgent } from "../screens/account/user-agent.ts";
import { translatorFor, type Translate } from "../i18n/translate.ts";
import type { Language } from "../../i18n/languages.ts";

/**
 * The emails the server sends, each in the language of the screen that asked for it: subject and plain text from
 * the catalogue (`app/i18n/locales/<language>/account.json`), so that every language ships every email
 * (docs/decisions/0019). The features that send them take these as functions and know no words.
 */

/** "Forgot password?": the link and the code beside it (docs/decisions/0020, 0030). */
export const recoveryEmail: RecoveryEmail = ({ service, link, code, minutes, handle }, language) => {
  const t = translatorFor(language);
  return { subject: t("account:recovery.email.subject", { service }), text: t("account:recovery.email.text", { service, link, code, handle, count: minutes }) };
};

/** The code that confirms deleting the account (docs/decisions/0030). */
export const deletionEmail: DeletionEmail = ({ service, code, minutes, handle }, language) => {
  const t = translatorFor(language);
  return { subject: t("account:deletion.email.subject", { service }), text: t("account:deletion.email.text", { service, code, handle, count: minutes }) };
};

/** The sign-in code a password session on the account's own password may need (docs/decisions/0047). */
export const signInCodeEmail: SignInCodeEmail = ({ service, code, minutes, handle }, language) => {
  const t = translatorFor(language);
  return { subject: t("account:appPasswords.signInCode.email.subject", { service }), text: t("account:appPasswords.signInCode.email.text", { service, code, handle, count: minutes }) };
};

/** A new email address: the code sent to it, and the notice to the old one (docs/decisions/0030). */
export const emailChangeEmails: EmailUpdateEmails = {
  confirm: ({ service, code, minutes, handle }, language) => {
    const t = translatorFor(language);
    return { subject: t("account:emailChange.confirmEmail.subject", { service }), text: t("account:emailChange.confirmEmail.text", { service, code, handle, count: minutes }) };
  },
  changed: ({ service, email, handle }, language) => {
    const t = translatorFor(language);
    return { subject: t("account:emailChange.changedEmail.subject", { service }), text: t("account:emailChange.changedEmail.text", { service, email, handle }) };
  },
};

/** The code that lets this server sign an operation on the account's DID (docs/decisions/0050). */
export const plcOperationEmail: PlcOperationEmail = ({ service, code, minutes, handle }, language) => {
  const t = translatorFor(language);
  return { subject: t("account:plcOperation.email.subject", { service }), text: t("account:plcOperation.email.text", { service, code, handle, count: minutes }) };
};

/** The notice that a key of the person's own now rotates the account's DID (docs/decisions/0050). */
export const keyAddedEmail: KeyAddedEmail = ({ service, handle, key }, language) => {
  const t = translatorFor(language);
  return { subject: t("account:ownKey.addedEmail.subject", { service }), text: t("account:ownKey.addedEmail.text", { service, handle, key }) };
};

/** The code that confirms the account's address, at sign-up and when asked (docs/decisions/0052). */
export const emailConfirmationEmail: ConfirmationEmail = ({ service, code, minutes, handle }, language) => {
  const t = translatorFor(language);
  return { subject: t("account:emailConfirmation.email.subject", { service }), text: t("account:emailConfirmation.email.text", { service, code, handle, count: minutes }) };
};

/**
 * What the new-sign-in and new-app emails say of when and where (docs/decisions/0056): the time in UTC, written the
 * language's way, and the network's country by its name in that language, or no line at all.
 */
function whenAndWhere({ when, country }: NoticeValues, language: Language, t: Translate): { when: string; place: string } {
  const time = new Intl.DateTimeFormat(language, { dateStyle: "long", timeStyle: "short", timeZone: "UTC" }).format(when);
  const name = country === undefined ? undefined : new Intl.DisplayNames([language], { type: "region", fallback: "code" }).of(country);
  return { when: time, place: name === undefined ? "" : `${t("account:signInNotices.email.place", { country: name })}\n` };
}

/** A browser that never signed in to the account before just did (docs/decisions/0056). */
export const newBrowserEmail: NewBrowserEmail = (values, language) => {
  const t = translatorFor(language);
  const browser = describeUserAgent(values.userAgent, t);
  return {
    subject: t("account:signInNotices.email.browserSubject", { service: values.service }),
    text: t("account:signInNotices.email.browserText", { ...values, browser, ...whenAndWhere(values, language, t) }),
  };
};

/** An app was given the account's access for the first time (docs/decisions/0056). */
export const newAppEmail: NewAppEmail = (values, language) => {
  const t = translatorFor(language);
  return {
    subject: t("account:signInNotices.email.appSubject", { service: values.service, app: values.app }),
    text: t("account:signInNotices.email.appText", { ...values, ...whenAndWhere(values, language, t) }),
  };
};
