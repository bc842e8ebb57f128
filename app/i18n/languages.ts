/**
 * The languages the screens ship (docs/decisions/0019): their tags as the screens use them (`<html lang>`,
 * `ui_locales_supported`), their names in themselves for the language picker, and the catalogue's namespaces.
 * Safe for the browser: no catalogue is imported here.
 */
export const LANGUAGES = ["en", "fr", "de", "es", "pt-BR", "ja"] as const;

export type Language = (typeof LANGUAGES)[number];

/** The last resort of the negotiation, and the language every other catalogue is checked against. */
export const DEFAULT_LANGUAGE: Language = "en";

/** Each language's name in itself: a person looks for their own language's name, not its English one. */
export const LANGUAGE_NAMES: Record<Language, string> = {
  en: "English",
  fr: "Français",
  de: "Deutsch",
  es: "Español",
  "pt-BR": "Português (Brasil)",
  ja: "日本語",
};

/**
 * One catalogue file per language and namespace (app/i18n/locales/<language>/<namespace>.json): common (brand,
 * error pages, start page, the entry's own pages), consent (the consent screen and an app's identity), permissions
 * (the permission descriptions), account (the account pages and their notices), passkey (the passkey components),
 * errors (what the server's refusals say) and admin (the operator page, docs/decisions/0051).
 */
export const NAMESPACES = ["common", "consent", "permissions", "account", "passkey", "errors", "admin"] as const;

export type Namespace = (typeof NAMESPACES)[number];

export function isLanguage(value: unknown): value is Language {
  return typeof value === "string" && (LANGUAGES as readonly string[]).includes(value);
}

/**
 * The locale dates are written in: English keeps the day-month-year order the screens have always shown
 * ("23 Nov 2026, 14:05"), whoever reads it; the others are their own.
 */
export function dateLocale(language: Language): string {
  return language === "en" ? "en-GB" : language;
}

/** Writing direction, for `<html dir>`: every shipped language is left-to-right; the check is here for the next one. */
export function textDirection(language: string): "ltr" | "rtl" {
  const base = language.split("-")[0]!.toLowerCase();
  return ["ar", "fa", "he", "ur", "ps", "yi", "dv", "ckb"].includes(base) ? "rtl" : "ltr";
}
