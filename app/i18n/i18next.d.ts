import type account from "./locales/en/account.json";
import type admin from "./locales/en/admin.json";
import type common from "./locales/en/common.json";
import type consent from "./locales/en/consent.json";
import type errors from "./locales/en/errors.json";
import type passkey from "./locales/en/passkey.json";
import type permissions from "./locales/en/permissions.json";

/** Keys are checked against the English catalogue at compile time (a typo is a type error, not a key on screen). */
declare module "i18next" {
  interface CustomTypeOptions {
    defaultNS: "common";
    resources: { common: typeof common; consent: typeof consent; permissions: typeof permissions; account: typeof account; passkey: typeof passkey; errors: typeof errors; admin: typeof admin };
    returnNull: false;
  }
}
