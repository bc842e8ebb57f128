import type { TFunction } from "i18next";
import { i18nFor } from "../../i18n/instance.ts";
import { DEFAULT_LANGUAGE, isLanguage, type Language } from "../../i18n/languages.ts";
import { resourcesOf } from "./catalogue.ts";

/**
 * The server's words in one language, from the same catalogue the pages use: the permission descriptions, the
 * refusals a form or an error page shows, the notices, the JSON errors the passkey scripts display. Keys carry their
 * namespace ("errors:form.enterPassword"); they are checked against the English catalogue at compile time.
 */
export type Translate = TFunction<["common", "consent", "permissions", "account", "passkey", "errors", "admin"]>;

export function translatorFor(language: Language): Translate {
  return i18nFor(language, resourcesOf(language)).getFixedT(language, ["common", "consent", "permissions", "account", "passkey", "errors", "admin"]) as Translate;
}

/** English: the text of log lines and of errors' own messages, the catalogue's first language. */
export const english: Translate = translatorFor(DEFAULT_LANGUAGE);

/**
 * English for a key chosen at run time (an error's reason): the error's own message. The screens look the same
 * key up in the person's language; app/i18n/catalogue.test.ts checks that every such key has its English.
 */
export function englishText(key: string, values: Record<string, string | number> = {}): string {
  return (english as unknown as (key: string, values: Record<string, string | number>) => string)(key, values);
}

/** The language a translator writes (i18next's fixed t carries it). */
export function languageOf(t: Translate): Language {
  const language = (t as unknown as { lng?: string }).lng;
  return language && isLanguage(language) ? language : DEFAULT_LANGUAGE;
}

/** A list in the translator's language ("a, b and c", "a、b、c"). */
export function listOf(t: Translate, items: readonly string[]): string {
  return new Intl.ListFormat(languageOf(t), { style: "long", type: "conjunction" }).format(items);
}
