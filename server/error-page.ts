import type { IncomingHttpHeaders } from "node:http";
import type { Config } from "../app/.server/config.ts";
import { screenLanguage, type LanguageSources } from "../app/.server/i18n/screen-language.ts";
import { translatorFor, type Translate } from "../app/.server/i18n/translate.ts";
import type { Language } from "../app/i18n/languages.ts";

/**
 * The page the entry answers with itself, for the screens (the Remix app's
 * own error pages are richer): a title, one sentence, a way back, in the
 * person's language (docs/decisions/0019: the picker's `lng`, the remembered
 * choice, Accept-Language; no authorization request is read here). The texts
 * are the catalogue's (common:entry), never request data.
 */

const sourcesByConfig = new WeakMap<Pick<Config, "publicUrl">, LanguageSources>();

/** The language of an answer the entry writes itself. */
export async function entryLanguage(config: Pick<Config, "publicUrl">, url: string | undefined, headers: IncomingHttpHeaders): Promise<Language> {
  let sources = sourcesByConfig.get(config);
  if (!sources) {
    sources = { config, authorize: { requestedLocales: async () => undefined } };
    sourcesByConfig.set(config, sources);
  }
  const request = new Request(new URL(url ?? "/", config.publicUrl), {
    headers: { cookie: String(headers.cookie ?? ""), "accept-language": String(headers["accept-language"] ?? "") },
  });
  return screenLanguage(sources, request).catch(() => "en" as const);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

/** An entry page in `language`: `words` picks its title and message from the catalogue. */
export function entryErrorPage(language: Language, words: (t: Translate) => { title: string; message: string }): string {
  const t = translatorFor(language);
  const { title, message } = words(t);
  return `<!doctype html><html lang="${language}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title></head><body><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p><p><a href="/">${escapeHtml(t("common:entry.startPage"))}</a></p></main></body></html>`;
}
