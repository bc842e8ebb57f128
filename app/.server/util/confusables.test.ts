import { describe, expect, it } from "vitest";
import { hasInvisibleCharacters, hasMixedScriptWord, hasStyledLetters, hasWholeScriptLookalike, looksLikeItContains, skeletons } from "./confusables.ts";

describe("skeletons", () => {
  it("folds case, spacing, punctuation, diacritics and styled letters", () => {
    expect(skeletons("Blue Sky")).toEqual(["bluesky"]);
    expect(skeletons("b.l.u.e-s_k y")).toEqual(["bluesky"]);
    expect(skeletons("Blüeský")).toEqual(["bluesky"]);
    // Mathematical bold and fullwidth letters (NFKC).
    expect(skeletons("𝐁𝐥𝐮𝐞𝐬𝐤𝐲")).toEqual(["bluesky"]);
    expect(skeletons("ＢＬＵＥＳＫＹ")).toEqual(["bluesky"]);
  });

  it("maps Cyrillic and Greek look-alikes, digits and rn/vv to the Latin letters they pass for", () => {
    expect(skeletons("Вluеsky")).toEqual(["bluesky"]); // Cyrillic В and е
    expect(skeletons("Οfficial")).toEqual(["official"]); // Greek capital omicron
    expect(skeletons("0fficia1")).toEqual(["official"]);
    expect(skeletons("Exarnple")).toEqual(["example"]);
    expect(skeletons("vvidget")).toEqual(["widget"]);
  });

  // Issue 16: Latin look-alikes of a well-known host. Diacritics go with NFD; letters drawn with a stroke, hook or
  // tail (which NFD leaves whole) are read through the table.
  it.each([
    "bşky.app", // s with cedilla
    "ƅsky.app", // tone six
    "ƀsky.app", // b with stroke
    "ɓsky.app", // b with hook
    "bśky.app",
    "bšky.app",
    "bsķy.app",
    "bsĸy.app", // kra
    "bskÿ.app",
    "bskŷ.app",
    "bsky.àpp",
    "bsky.ąpp",
    "bsky.aƥp", // p with hook
    "b\u0301s\u0323ky.app", // combining marks
    "ｂｓｋｙ.app", // fullwidth
    "bѕky.app", // Cyrillic dze
    "BŞKY.APP",
    "Ƀsky.app",
    "ʙsky.app", // small capital B
    "bꜱky.app", // small capital S
    "ʙꜱᴋʏ.ᴀᴘᴘ", // small capitals throughout
  ])("reads %j as bsky.app", (text) => {
    expect(skeletons(text)).toContain("bskyapp");
  });

  it.each([
    ["łogin", "login"],
    ["ŁOGIN", "login"],
    ["bøøk", "book"],
    ["ØFFICIAL", "official"],
    ["đomain", "domain"],
    ["ħello", "hello"],
    ["ıd", "id"],
    ["ȷump", "jump"],
    ["ŧoken", "token"],
    ["ƶero", "zero"],
    ["ɱail", "mail"],
    ["ŋews", "news"],
    ["ʋote", "vote"],
    ["ƴes", "yes"],
    ["æsop", "aesop"],
  ])("reads the letters NFD leaves whole: %j as %j", (text, plain) => {
    expect(skeletons(text)).toContain(plain);
  });

  it("reads a capital I as a small l too, without losing the plain reading", () => {
    expect(skeletons("BIuesky")).toEqual(["biuesky", "bluesky"]);
    expect(skeletons("OFFICIAL")).toContain("official");
  });
});

describe("looksLikeItContains", () => {
  it.each(["Bluesky", "Bluesky (official app)", "The BLUESKY client", "B1uesky", "Вluesky", "BIuesky", "Blue sky", "𝐁𝐥𝐮𝐞𝐬𝐤𝐲 Social", "bsky-bluesky.example"])(
    "finds bluesky in %j",
    (text) => {
      expect(looksLikeItContains(text, "Bluesky")).toBe(true);
    },
  );

  it.each(["Skyline Photos", "Blue Skies", "Graysky", "bsky.app"])("does not find bluesky in %j", (text) => {
    expect(looksLikeItContains(text, "bluesky")).toBe(false);
  });

  it("never matches terms shorter than four letters (they would match everything)", () => {
    expect(looksLikeItContains("PDS Tools", "PDS")).toBe(false);
  });
});

describe("mixed scripts and whole-script look-alikes", () => {
  it("flags a word that mixes Latin with Cyrillic or Greek letters", () => {
    expect(hasMixedScriptWord("Blueskу")).toBe(true); // Cyrillic у at the end
    expect(hasMixedScriptWord("Pаypal")).toBe(true); // Cyrillic а
    expect(hasMixedScriptWord("Οfficial")).toBe(true); // Greek Ο
  });

  it("does not flag one script per word, or Latin beside Han, Kana or Hangul", () => {
    expect(hasMixedScriptWord("Skyline Photos")).toBe(false);
    expect(hasMixedScriptWord("Фото Skyline")).toBe(false);
    expect(hasMixedScriptWord("Skyline写真")).toBe(false);
    expect(hasMixedScriptWord("Ελληνικά")).toBe(false);
  });

  it("flags a word written entirely in look-alike letters of another script", () => {
    expect(hasWholeScriptLookalike("раурсо")).toBe(true); // Cyrillic, reads "paypco"
    expect(hasWholeScriptLookalike("Фото")).toBe(false); // Ф has no Latin twin
    expect(hasWholeScriptLookalike("Привет")).toBe(false);
  });

  it("flags styled letters and invisible format characters", () => {
    expect(hasStyledLetters("𝐁𝐥𝐮𝐞")).toBe(true);
    expect(hasStyledLetters("Blue")).toBe(false);
    expect(hasInvisibleCharacters("Blue\u200bsky")).toBe(true);
    expect(hasInvisibleCharacters("Blue\u00adsky")).toBe(true);
    // The zero-width joiner of emoji sequences is left alone.
    expect(hasInvisibleCharacters("Family 👩\u200d👧")).toBe(false);
  });
});
