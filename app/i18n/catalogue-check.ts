import type { Catalogue } from "../.server/i18n/catalogue.ts";

/**
 * What makes a language's catalogue complete (docs/decisions/0019), checked against English by app/i18n/catalogue.test.ts:
 * - every English key is there, and no key English does not have (a renamed key leaves no orphan behind);
 * - a plural key (English "x_one", "x_other") has exactly the forms the language's plural rules use
 *   (Intl.PluralRules: Japanese "x_other" only; French, Spanish and Portuguese also "x_many"), and a key that is not
 *   plural in English is not plural in the language;
 * - each text has the same placeholders ({{name}}) as its English text; a plural form may leave out {{count}}
 *   ("une clé" for one), the other placeholders it must keep;
 * - no text is empty.
 */

const PLURAL_SUFFIX = /_(zero|one|two|few|many|other)$/;

export type CatalogueProblem = { key: string; problem: string };

/** Every key of a namespace as a dotted path, with its text. */
export function flatten(catalogue: Catalogue, prefix = ""): Map<string, unknown> {
  const keys = new Map<string, unknown>();
  for (const [key, value] of Object.entries(catalogue)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (value !== null && typeof value === "object" && !Array.isArray(value)) for (const [inner, text] of flatten(value as Catalogue, path)) keys.set(inner, text);
    else keys.set(path, value);
  }
  return keys;
}

/** The names of a text's placeholders: "{{count, number}}" is "count". */
export function placeholders(text: string): Set<string> {
  return new Set([...text.matchAll(/\{\{\s*([\w.-]+)\s*(?:,[^}]*)?\}\}/g)].map((match) => match[1]!));
}

function sameSet(a: Set<string>, b: Set<string>): boolean {
  return a.size === b.size && [...a].every((item) => b.has(item));
}

/** Base key → its plural forms ("one", "other"…), or undefined for a key that is not plural. */
function byBase(keys: Iterable<string>): Map<string, Set<string> | undefined> {
  const bases = new Map<string, Set<string> | undefined>();
  for (const key of keys) {
    const form = PLURAL_SUFFIX.exec(key)?.[1];
    if (!form) {
      bases.set(key, bases.get(key));
      continue;
    }
    const base = key.slice(0, -form.length - 1);
    const forms = bases.get(base) ?? new Set<string>();
    forms.add(form);
    bases.set(base, forms);
  }
  return bases;
}

/** The problems of `language`'s namespace against English's; none means complete. */
export function checkNamespace(language: string, english: Catalogue, translated: Catalogue): CatalogueProblem[] {
  const problems: CatalogueProblem[] = [];
  const en = flatten(english);
  const own = flatten(translated);
  const enBases = byBase(en.keys());
  const ownBases = byBase(own.keys());
  const categories = new Set<string>(new Intl.PluralRules(language).resolvedOptions().pluralCategories);

  for (const [base, forms] of enBases) {
    if (!ownBases.has(base)) {
      problems.push({ key: base, problem: "missing" });
      continue;
    }
    const ownForms = ownBases.get(base);
    if (forms && !ownForms) problems.push({ key: base, problem: "plural in English, not here" });
    if (!forms && ownForms) problems.push({ key: base, problem: "not plural in English, plural here" });
    if (forms && ownForms && !sameSet(ownForms, categories)) {
      problems.push({ key: base, problem: `plural forms ${[...ownForms].sort().join(", ")}; ${language} needs ${[...categories].sort().join(", ")}` });
    }
  }
  for (const base of ownBases.keys()) if (!enBases.has(base)) problems.push({ key: base, problem: "not in English" });

  for (const [key, text] of own) {
    if (typeof text !== "string" || !text.trim()) {
      problems.push({ key, problem: "not a text, or empty" });
      continue;
    }
    const form = PLURAL_SUFFIX.exec(key)?.[1];
    const base = form ? key.slice(0, -form.length - 1) : key;
    const reference = form ? en.get(`${base}_other`) : en.get(key);
    if (typeof reference !== "string") continue;
    const expected = placeholders(reference);
    const found = placeholders(text);
    if (form) {
      expected.delete("count");
      found.delete("count");
    }
    if (!sameSet(expected, found)) {
      problems.push({ key, problem: `placeholders {${[...found].sort().join(", ")}}; English has {${[...expected].sort().join(", ")}}` });
    }
  }
  return problems;
}
