import { createInstance, type i18n as I18n, type Resource } from "i18next";
import { DEFAULT_LANGUAGE, NAMESPACES, type Language } from "./languages";

/**
 * An i18next instance for one language, from that language's catalogue (every namespace, already completed with
 * English where a key is still missing: app/.server/i18n/catalogue.ts). The server renders with it and the browser
 * hydrates with the same one, built from the root loader's data: the same words on both sides, and no request for
 * translation files.
 */
export type LanguageResources = Record<string, unknown>;

/**
 * One instance per catalogue object: a language has two on the server (the people's pages' and the operator page's,
 * app/.server/i18n/catalogue.ts pageResourcesOf), each built once.
 */
const cache = new WeakMap<LanguageResources, { language: Language; instance: I18n }>();

export function i18nFor(language: Language, resources: LanguageResources): I18n {
  const cached = cache.get(resources);
  if (cached && cached.language === language) return cached.instance;
  const instance = createInstance();
  void instance.init({
    lng: language,
    fallbackLng: false,
    supportedLngs: [language],
    ns: [...NAMESPACES],
    defaultNS: "common",
    resources: { [language]: resources } as Resource,
    // React escapes what it renders; the entry's own pages escape themselves (server/error-page.ts).
    interpolation: { escapeValue: false },
    // The resources are here: initialise synchronously, so the first render already has the words.
    initImmediate: false,
    returnNull: false,
    react: { useSuspense: false },
  });
  cache.set(resources, { language, instance });
  return instance;
}

export { DEFAULT_LANGUAGE };
