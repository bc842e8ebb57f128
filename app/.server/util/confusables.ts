/**
 * Text that looks like other text: a small, explainable subset of Unicode TR #39 ("Unicode Security Mechanisms"),
 * enough to tell a person that an app's name or address may be imitating another (docs/decisions/0018). Not the
 * full confusables table (thousands of entries): the letters below are the ones that render identically, or
 * nearly, to Latin letters in common UI fonts, which is what a look-alike of an English-written name uses.
 *
 * The rules:
 * - **Skeleton** (TR #39 §4, reduced): NFKC (folds fullwidth and "mathematical" letters such as 𝐁𝐥𝐮𝐞 to Blue),
 *   diacritics removed (NFD, then every combining mark: Blüesky → Bluesky, bşky → bsky), the look-alike letters
 *   below mapped to their Latin twin (other scripts' letters, and Latin letters drawn with a stroke or hook that NFD
 *   does not separate: ƅ, ł, ø, đ, ħ, ı → b, l, o, d, h, i), then lower
 *   case, `rn` read as `m` and `vv` as `w`, and everything but letters and digits dropped (spaces, dots, dashes,
 *   zero-width characters: "B l u e-s.k y" → bluesky). Two texts whose skeletons match look alike.
 *   Capital I is also read as small l (identical in sans-serif fonts: "BIuesky"); since that would hide
 *   "OFFICIAL" from a search for "official", a text has two skeletons, with and without that one rule.
 * - **Mixed script** (TR #39 §5.2, "Highly Restrictive", reduced): a word (a run of letters and digits) that
 *   mixes Latin, Cyrillic, Greek, Armenian or Cherokee. Those scripts share look-alike letters, and no real word
 *   mixes them; mixing Latin with Han, Kana or Hangul (which the profile allows) is not flagged.
 * - **Whole-script look-alike** (TR #39 §4, "whole-script confusables", reduced): a word written entirely in
 *   Cyrillic, Greek or Armenian letters that all have a Latin twin ("раураl" spelled in Cyrillic): it reads as a
 *   Latin word that it is not.
 * - **Styled letters**: letters that NFKC changes (𝐁𝐥𝐮𝐞𝐬𝐤𝐲, ｆｕｌｌｗｉｄｔｈ): TR #39 excludes them from identifiers.
 */

/** Letters of other scripts (and a few Latin ones) that look like a Latin letter: mapped to that letter. */
const LOOKALIKES: Readonly<Record<string, string>> = {
  // Cyrillic
  а: "a", в: "b", е: "e", ё: "e", һ: "h", і: "i", ї: "i", ј: "j", к: "k", ӏ: "l", м: "m", н: "h", о: "o", р: "p", с: "c",
  т: "t", у: "y", х: "x", ѕ: "s", ԁ: "d", ԛ: "q", ԝ: "w", ь: "b", г: "r", п: "n", ү: "y",
  А: "A", В: "B", Е: "E", Ё: "E", Һ: "H", І: "I", Ї: "I", Ј: "J", К: "K", М: "M", Н: "H", О: "O", Р: "P", С: "C",
  Т: "T", У: "Y", Х: "X", Ѕ: "S", Ԁ: "D", Ԛ: "Q", Ԝ: "W", Ү: "Y", Ӏ: "l",
  // Greek
  α: "a", β: "b", ε: "e", ι: "i", κ: "k", ν: "v", ο: "o", ρ: "p", τ: "t", υ: "u", χ: "x", γ: "y", ω: "w",
  Α: "A", Β: "B", Ε: "E", Ζ: "Z", Η: "H", Ι: "I", Κ: "K", Μ: "M", Ν: "N", Ο: "O", Ρ: "P", Τ: "T", Υ: "Y", Χ: "X",
  // Armenian
  օ: "o", ս: "u", հ: "h", ո: "n", ց: "g", զ: "q",
  // Cherokee
  Ꭺ: "A", Ᏼ: "B", Ꮯ: "C", Ꭼ: "E", Ꮋ: "H", Ꮶ: "K", Ꮇ: "M", Ꮲ: "P", Ꭲ: "T", Ꮃ: "W", Ꮪ: "S",
  // Latin letters and digits that pass for others
  ı: "i", ɩ: "i", ʟ: "l", ɡ: "g", "0": "o", "1": "l", "|": "l",
  // Latin letters whose stroke, hook, bar or tail is part of the letter, not a combining mark, so NFD leaves them
  // whole (ƅsky, bsĸy, łogin): read as the plain letter they are drawn from, like the diacritics NFD removes.
  ƀ: "b", ƅ: "b", ɓ: "b", ƈ: "c", ȼ: "c", ɕ: "c", đ: "d", ð: "d", ɗ: "d", ɖ: "d", ƌ: "d", ȡ: "d", ɇ: "e", ƒ: "f",
  ɠ: "g", ǥ: "g", ħ: "h", ɦ: "h", ɨ: "i", ȷ: "j", ɉ: "j", ʝ: "j", ƙ: "k", ĸ: "k", ł: "l", ƚ: "l", ɫ: "l", ɬ: "l",
  ɭ: "l", ǀ: "l", ɱ: "m", ɲ: "n", ɳ: "n", ƞ: "n", ŋ: "n", ȵ: "n", ø: "o", ɵ: "o", ƥ: "p", ʠ: "q", ɋ: "q", ɍ: "r",
  ɽ: "r", ɾ: "r", ʂ: "s", ȿ: "s", ŧ: "t", ƭ: "t", ʈ: "t", ƫ: "t", ȶ: "t", ʉ: "u", ʋ: "v", ⱱ: "v", ⱳ: "w", ƴ: "y",
  ɏ: "y", ƶ: "z", ȥ: "z", ʐ: "z", ʑ: "z", ɀ: "z", æ: "ae", œ: "oe",
  Ɓ: "B", Ƀ: "B", Ƈ: "C", Ȼ: "C", Đ: "D", Ð: "D", Ɖ: "D", Ɗ: "D", Ɇ: "E", Ƒ: "F", Ǥ: "G", Ɠ: "G", Ħ: "H", Ɨ: "I",
  Ɉ: "J", Ƙ: "K", Ł: "L", Ƚ: "L", Ɲ: "N", Ŋ: "N", Ø: "O", Ɵ: "O", Ƥ: "P", Ɋ: "Q", Ɍ: "R", Ŧ: "T", Ƭ: "T", Ʈ: "T",
  Ʉ: "U", Ʋ: "V", Ƴ: "Y", Ɏ: "Y", Ƶ: "Z", Ȥ: "Z", Æ: "AE", Œ: "OE",
  // Latin small capitals (phonetic letters that NFKC leaves alone): ʙsky.app reads as bsky.app at text size.
  ᴀ: "a", ʙ: "b", ᴄ: "c", ᴅ: "d", ᴇ: "e", ꜰ: "f", ɢ: "g", ʜ: "h", ɪ: "i", ᴊ: "j", ᴋ: "k", ᴍ: "m", ɴ: "n", ᴏ: "o", ᴘ: "p",
  ꞯ: "q", ʀ: "r", ꜱ: "s", ᴛ: "t", ᴜ: "u", ᴠ: "v", ᴡ: "w", ʏ: "y", ᴢ: "z",
};

const CONFUSABLE_SCRIPTS = ["Latin", "Cyrillic", "Greek", "Armenian", "Cherokee"] as const;
type ConfusableScript = (typeof CONFUSABLE_SCRIPTS)[number];

const SCRIPT_PATTERNS: Record<ConfusableScript, RegExp> = {
  Latin: /\p{Script=Latin}/u,
  Cyrillic: /\p{Script=Cyrillic}/u,
  Greek: /\p{Script=Greek}/u,
  Armenian: /\p{Script=Armenian}/u,
  Cherokee: /\p{Script=Cherokee}/u,
};

function scriptOf(character: string): ConfusableScript | undefined {
  return CONFUSABLE_SCRIPTS.find((script) => SCRIPT_PATTERNS[script].test(character));
}

function mapLookalikes(text: string, capitalIAsL: boolean): string {
  let out = "";
  for (const character of text) {
    if (capitalIAsL && character === "I") out += "l";
    else out += LOOKALIKES[character] ?? character;
  }
  return out;
}

function skeletonOf(text: string, capitalIAsL: boolean): string {
  const folded = text.normalize("NFKC").normalize("NFD").replace(/\p{M}/gu, "");
  return mapLookalikes(folded, capitalIAsL)
    .toLowerCase()
    .replace(/rn/g, "m")
    .replace(/vv/g, "w")
    .replace(/[^\p{L}\p{N}]/gu, "");
}

/** The skeletons of a text (see above): one, or two when it holds a capital I. */
export function skeletons(text: string): string[] {
  const plain = skeletonOf(text, false);
  const withL = skeletonOf(text, true);
  return plain === withL ? [plain] : [plain, withL];
}

/** The one skeleton of a term searched for (written plainly, e.g. "official"). */
export function termSkeleton(term: string): string {
  return skeletonOf(term, false);
}

/** Whether `text` looks like it contains `term` (skeleton containment). Terms of fewer than 4 letters never match. */
export function looksLikeItContains(text: string, term: string): boolean {
  const wanted = termSkeleton(term);
  if (wanted.length < 4) return false;
  return skeletons(text).some((skeleton) => skeleton.includes(wanted));
}

/** The words of a text: runs of letters, marks and digits. */
function wordsOf(text: string): string[] {
  return text.normalize("NFC").match(/[\p{L}\p{M}\p{N}]+/gu) ?? [];
}

/** A word that mixes Latin, Cyrillic, Greek, Armenian or Cherokee letters. */
export function hasMixedScriptWord(text: string): boolean {
  return wordsOf(text).some((word) => {
    const scripts = new Set<ConfusableScript>();
    for (const character of word) {
      const script = scriptOf(character);
      if (script) scripts.add(script);
    }
    return scripts.size > 1;
  });
}

/** A word of two or more Cyrillic, Greek or Armenian letters that all have a Latin twin. */
export function hasWholeScriptLookalike(text: string): boolean {
  return wordsOf(text).some((word) => {
    const letters = [...word].filter((character) => /\p{L}/u.test(character));
    if (letters.length < 2) return false;
    const scripts = new Set(letters.map(scriptOf));
    if (scripts.size !== 1 || scripts.has("Latin") || scripts.has(undefined)) return false;
    return letters.every((letter) => LOOKALIKES[letter] !== undefined);
  });
}

/** Letters or digits that NFKC rewrites: fullwidth, mathematical, circled or otherwise styled forms. */
export function hasStyledLetters(text: string): boolean {
  for (const character of text) {
    if (/[\p{L}\p{N}]/u.test(character) && character.normalize("NFKC") !== character) return true;
  }
  return false;
}

/**
 * Invisible format characters (Unicode category Cf: zero-width spaces and joiners, word joiners, soft hyphens,
 * byte-order marks, tag characters): they can split or join words unseen. The zero-width joiner alone is left
 * out, since emoji sequences need it.
 */
export function hasInvisibleCharacters(text: string): boolean {
  for (const character of text) {
    if (character !== "\u200d" && /\p{Cf}/u.test(character)) return true;
  }
  return false;
}

/** Any of the look-alike rules above (not term matching): the text is built to pass for other text. */
export function looksDeceptive(text: string): boolean {
  return hasMixedScriptWord(text) || hasWholeScriptLookalike(text) || hasStyledLetters(text);
}
