import enAdmin from "../../i18n/locales/en/admin.json";
import deAdmin from "../../i18n/locales/de/admin.json";
import esAdmin from "../../i18n/locales/es/admin.json";
import frAdmin from "../../i18n/locales/fr/admin.json";
import jaAdmin from "../../i18n/locales/ja/admin.json";
import ptBRAdmin from "../../i18n/locales/pt-BR/admin.json";
import enAccount from "../../i18n/locales/en/account.json";
import enCommon from "../../i18n/locales/en/common.json";
import enConsent from "../../i18n/locales/en/consent.json";
import enErrors from "../../i18n/locales/en/errors.json";
import enPasskey from "../../i18n/locales/en/passkey.json";
import enPermissions from "../../i18n/locales/en/permissions.json";
import deAccount from "../../i18n/locales/de/account.json";
import deCommon from "../../i18n/locales/de/common.json";
import deConsent from "../../i18n/locales/de/consent.json";
import deErrors from "../../i18n/locales/de/errors.json";
import dePasskey from "../../i18n/locales/de/passkey.json";
import dePermissions from "../../i18n/locales/de/permissions.json";
import esAccount from "../../i18n/locales/es/account.json";
import esCommon from "../../i18n/locales/es/common.json";
import esConsent from "../../i18n/locales/es/consent.json";
import esErrors from "../../i18n/locales/es/errors.json";
import esPasskey from "../../i18n/locales/es/passkey.json";
import esPermissions from "../../i18n/locales/es/permissions.json";
import frAccount from "../../i18n/locales/fr/account.json";
import frCommon from "../../i18n/locales/fr/common.json";
import frConsent from "../../i18n/locales/fr/consent.json";
import frErrors from "../../i18n/locales/fr/errors.json";
import frPasskey from "../../i18n/locales/fr/passkey.json";
import frPermissions from "../../i18n/locales/fr/permissions.json";
import jaAccount from "../../i18n/locales/ja/account.json";
import jaCommon from "../../i18n/locales/ja/common.json";
import jaConsent from "../../i18n/locales/ja/consent.json";
import jaErrors from "../../i18n/locales/ja/errors.json";
import jaPasskey from "../../i18n/locales/ja/passkey.json";
import jaPermissions from "../../i18n/locales/ja/permissions.json";
import ptBRAccount from "../../i18n/locales/pt-BR/account.json";
import ptBRCommon from "../../i18n/locales/pt-BR/common.json";
import ptBRConsent from "../../i18n/locales/pt-BR/consent.json";
import ptBRErrors from "../../i18n/locales/pt-BR/errors.json";
import ptBRPasskey from "../../i18n/locales/pt-BR/passkey.json";
import ptBRPermissions from "../../i18n/locales/pt-BR/permissions.json";
import { DEFAULT_LANGUAGE, LANGUAGES, NAMESPACES, type Language, type Namespace } from "../../i18n/languages.ts";
import type { LanguageResources } from "../../i18n/instance.ts";

/**
 * The screens' catalogues, bundled into the server build (docs/decisions/0019): one JSON file per language and
 * namespace under app/i18n/locales/. A new key goes into the English file first; a test
 * (app/i18n/catalogue.test.ts) fails until every language has it, with the same placeholders and the plural forms its
 * language needs. Until then the screens show the English text for it, never the key.
 *
 * Only the server imports this module: a page receives its one language's catalogue with the root loader's data.
 */

export type Catalogue = { [key: string]: string | Catalogue };

export const CATALOGUES: Record<Language, Record<Namespace, Catalogue>> = {
  en: { common: enCommon, consent: enConsent, permissions: enPermissions, account: enAccount, passkey: enPasskey, errors: enErrors, admin: enAdmin },
  fr: { common: frCommon, consent: frConsent, permissions: frPermissions, account: frAccount, passkey: frPasskey, errors: frErrors, admin: frAdmin },
  de: { common: deCommon, consent: deConsent, permissions: dePermissions, account: deAccount, passkey: dePasskey, errors: deErrors, admin: deAdmin },
  es: { common: esCommon, consent: esConsent, permissions: esPermissions, account: esAccount, passkey: esPasskey, errors: esErrors, admin: esAdmin },
  "pt-BR": { common: ptBRCommon, consent: ptBRConsent, permissions: ptBRPermissions, account: ptBRAccount, passkey: ptBRPasskey, errors: ptBRErrors, admin: ptBRAdmin },
  ja: { common: jaCommon, consent: jaConsent, permissions: jaPermissions, account: jaAccount, passkey: jaPasskey, errors: jaErrors, admin: jaAdmin },
};

/** English under the language's own words: a key not yet translated reads in English rather than as its key. */
function completed(base: Catalogue, own: Catalogue): Catalogue {
  const result: Catalogue = { ...base };
  for (const [key, value] of Object.entries(own)) {
    const under = base[key];
    result[key] = typeof value === "object" && typeof under === "object" ? completed(under, value) : value;
  }
  return result;
}

const RESOURCES = new Map<Language, LanguageResources>(
  LANGUAGES.map((language) => [
    language,
    Object.fromEntries(NAMESPACES.map((ns) => [ns, language === DEFAULT_LANGUAGE ? CATALOGUES.en[ns] : completed(CATALOGUES.en[ns], CATALOGUES[language][ns])])),
  ]),
);

/** A language's whole catalogue, every namespace, completed with English: what the server translates with. */
export function resourcesOf(language: Language): LanguageResources {
  return RESOURCES.get(language)!;
}

/**
 * Namespaces only the server reads: the refusals are translated before they reach a page (screens/outcome.ts), so
 * pages are not sent them.
 */
const SERVER_ONLY: readonly Namespace[] = ["errors"];
/** Only the operator page's own pages are sent its words (docs/decisions/0051): the people's pages stay as light. */
const OPERATOR_ONLY: readonly Namespace[] = ["admin"];

function pageResources(language: Language, operator: boolean): LanguageResources {
  const left = operator ? SERVER_ONLY : [...SERVER_ONLY, ...OPERATOR_ONLY];
  return Object.fromEntries(Object.entries(resourcesOf(language)).filter(([ns]) => !left.includes(ns as Namespace)));
}

const PAGE_RESOURCES = new Map<Language, LanguageResources>(LANGUAGES.map((language) => [language, pageResources(language, false)]));
const OPERATOR_PAGE_RESOURCES = new Map<Language, LanguageResources>(LANGUAGES.map((language) => [language, pageResources(language, true)]));

/**
 * What a page is rendered and hydrated with (the root loader's data): its language's catalogue, less SERVER_ONLY,
 * and less OPERATOR_ONLY but on the operator page (`path` under /admin).
 */
export function pageResourcesOf(language: Language, path = "/"): LanguageResources {
  const operator = path === "/admin" || path.startsWith("/admin/");
  return (operator ? OPERATOR_PAGE_RESOURCES : PAGE_RESOURCES).get(language)!;
}
