import type { DeletionEmail } from "../accounts/account-deletion.ts";
import type { SignInCodeEmail } from "../accounts/email-auth-factor.ts";
import type { EmailUpdateEmails } from "../accounts/email-update.ts";
import type { RecoveryEmail } from "../accounts/password-recovery.ts";
import type { KeyAddedEmail } from "../identity/own-keys.ts";
import type { PlcOperationEmail } from "../identity/plc-operations.ts";
import { translatorFor } from "../i18n/translate.ts";

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
