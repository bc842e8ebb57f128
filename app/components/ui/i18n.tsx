import type { TFunction } from "i18next";
import { useTranslation } from "react-i18next";
import { i18nFor, type LanguageResources } from "../../i18n/instance";
import { DEFAULT_LANGUAGE, isLanguage, type Language } from "../../i18n/languages";

/**
 * The screens' words (docs/decisions/0019). Every key names its namespace ("consent:heading.allow"); keys are
 * checked against the English catalogue at compile time. A sentence that holds an element (a link, a host that
 * wraps between its parts) is translated whole with a slot for it, then filled (ui/fill.tsx):
 * `fill(t("consent:takeBack", slots("link")), { link: <a …/> })`.
 */
export type T = TFunction<["common", "consent", "permissions", "account", "passkey", "errors", "admin"]>;

const ALL = ["common", "consent", "permissions", "account", "passkey", "errors", "admin"] as const;

export function useT(): { t: T; language: Language } {
  const { t, i18n } = useTranslation([...ALL]);
  return { t: t as unknown as T, language: isLanguage(i18n.language) ? i18n.language : DEFAULT_LANGUAGE };
}

/** Placeholders kept as `{name}` through the translation, for fill() to put elements in. */
export function slots<N extends string>(...names: N[]): Record<N, string> {
  return Object.fromEntries(names.map((name) => [name, `{${name}}`])) as Record<N, string>;
}

/** What the root loader sends every page: its language and that language's catalogue. */
export type RootI18n = { language: Language; resources: LanguageResources };

export function rootI18nOf(matches: readonly { id: string; data?: unknown }[]): RootI18n | undefined {
  const root = matches.find((match) => match.id === "root")?.data as Partial<RootI18n> | undefined;
  return root?.language && root.resources ? { language: root.language, resources: root.resources } : undefined;
}

/** The words for a route's `meta` (tab titles), which cannot use hooks: from the root loader's data. */
export function metaT(matches: readonly { id: string; data?: unknown }[]): T {
  const root = rootI18nOf(matches);
  const instance = i18nFor(root?.language ?? DEFAULT_LANGUAGE, root?.resources ?? {});
  return instance.getFixedT(instance.language, [...ALL]) as unknown as T;
}
