import { describe, expect, it } from "vitest";
import type { PasskeyFailure } from "../.server/accounts/passkey-manager.ts";
import { CATALOGUES, resourcesOf } from "../.server/i18n/catalogue.ts";
import { english, translatorFor } from "../.server/i18n/translate.ts";
import type { AuthorizationPage } from "../.server/oauth/authorize/authorize-manager.ts";
import { checkNamespace, flatten, placeholders } from "./catalogue-check.ts";
import { LANGUAGES, NAMESPACES } from "./languages.ts";

describe("the catalogues", () => {
  for (const language of LANGUAGES.filter((one) => one !== "en")) {
    for (const ns of NAMESPACES) {
      it(`${language}/${ns}.json has every English key, no other, the same placeholders and ${language}'s plural forms`, () => {
        expect(checkNamespace(language, CATALOGUES.en[ns], CATALOGUES[language][ns])).toEqual([]);
      });
    }
  }

  it("English texts are texts, with well-formed placeholders", () => {
    for (const ns of NAMESPACES) {
      for (const [key, text] of flatten(CATALOGUES.en[ns])) {
        expect(typeof text, `${ns}:${key}`).toBe("string");
        // A lone brace would be a placeholder typo ({name} instead of {{name}}).
        expect((text as string).replace(/\{\{[^}]+\}\}/g, ""), `${ns}:${key}`).not.toMatch(/[{}]/);
      }
    }
  });

  it("the flags that are not words hold one of their values in every language", () => {
    for (const language of LANGUAGES) expect(["lowercase", "as-is"]).toContain(translatorFor(language)("permissions:labelsInSentence"));
  });

  it("every key the server picks at run time has its English text", () => {
    const failures: PasskeyFailure[] = ["malformed", "nameMissing", "nameTooLong", "registrationExpired", "registrationFailed", "notVerified", "alreadyRegistered", "challengeSpent", "unknownPasskey", "verificationFailed", "notFound", "accountGone"];
    const pages: AuthorizationPage[] = ["notPushed", "expired", "noClientId", "otherClient", "unreachable", "answered", "unsupported", "noRequestUri"];
    const exists = (key: string) => (english as unknown as { (key: string, options: object): string })(key, { count: 2, defaultValue: "\u0000" }) !== "\u0000";
    for (const failure of failures) expect(exists(`errors:passkey.${failure}`), failure).toBe(true);
    for (const page of pages) for (const part of ["title", "message"]) expect(exists(`errors:authorize.${page}.${part}`), page).toBe(true);
  });

  it("plural forms follow each language's rules", () => {
    expect(translatorFor("en")("account:overview.apps", { count: 1 })).toBe("1 app has access to your account.");
    expect(translatorFor("en")("account:overview.apps", { count: 3 })).toBe("3 apps have access to your account.");
    expect(translatorFor("fr")("account:overview.apps", { count: 1 })).toBe("1 application a accès à votre compte.");
    expect(translatorFor("fr")("account:overview.apps", { count: 2 })).toBe("2 applications ont accès à votre compte.");
    expect(translatorFor("ja")("account:overview.apps", { count: 1 })).toBe(translatorFor("ja")("account:overview.apps", { count: 1 }));
    expect(translatorFor("ja")("account:overview.apps", { count: 1 })).toContain("1");
  });

  it("a key missing in one language reads in English there, never as its key", () => {
    const resources = resourcesOf("de") as Record<string, Record<string, unknown>>;
    expect(Object.keys(resources)).toEqual([...NAMESPACES]);
    expect(flatten(resources.common as never).size).toBeGreaterThanOrEqual(flatten(CATALOGUES.en.common).size);
  });
});

describe("checkNamespace", () => {
  const en = { a: "Hello {{name}}", b: { c: "Bye" }, n_one: "{{count}} app", n_other: "{{count}} apps" };

  it("passes a complete catalogue", () => {
    expect(checkNamespace("de", en, { a: "Hallo {{name}}", b: { c: "Tschüss" }, n_one: "eine App", n_other: "{{count}} Apps" })).toEqual([]);
  });

  it("fails a missing key, a key English does not have, and different placeholders", () => {
    expect(checkNamespace("de", en, { a: "Hallo", b: { c: "Tschüss", d: "Extra" }, n_one: "eine App", n_other: "{{count}} Apps" })).toEqual([
      { key: "b.d", problem: "not in English" },
      { key: "a", problem: "placeholders {}; English has {name}" },
    ]);
    expect(checkNamespace("de", en, { b: { c: "Tschüss" }, n_one: "x", n_other: "y" })).toEqual([{ key: "a", problem: "missing" }]);
  });

  it("fails plural forms the language does not use, or lacks", () => {
    expect(checkNamespace("ja", en, { a: "{{name}}", b: { c: "さようなら" }, n_other: "{{count}} 個のアプリ" })).toEqual([]);
    expect(checkNamespace("ja", en, { a: "{{name}}", b: { c: "x" }, n_one: "x", n_other: "y" })[0]?.problem).toMatch(/ja needs other/);
    expect(checkNamespace("fr", en, { a: "{{name}}", b: { c: "x" }, n_one: "x", n_other: "y" })[0]?.problem).toMatch(/fr needs many, one, other/);
    expect(checkNamespace("de", en, { a: "{{name}}", b: { c: "x" }, n: "x" })[0]?.problem).toBe("plural in English, not here");
  });

  it("reads placeholders with formats", () => {
    expect([...placeholders("{{count, number}} of {{ total }}")]).toEqual(["count", "total"]);
  });
});
