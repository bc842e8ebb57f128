/**
 * Unicode bidirectional controls (LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI,
 * PDI, LRM, RLM, ALM) and control characters: text carrying them can read
 * differently from the characters it is made of (Unicode TR #9; "Trojan
 * Source"). Text that others wrote (an app's name, a permission set's
 * title) loses them before anyone sees it; the screens also show such text
 * in its own bidi isolate.
 */
// eslint-disable-next-line no-control-regex -- the point is to match control characters
const HIDDEN_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** Whether text carries any of those characters (a name that did is suspect: the screens say so). */
export function hasHiddenCharacters(text: string | undefined): boolean {
  if (text === undefined) return false;
  HIDDEN_CHARACTERS.lastIndex = 0;
  const found = HIDDEN_CHARACTERS.test(text);
  HIDDEN_CHARACTERS.lastIndex = 0;
  return found;
}

/** Someone else's text as it may be shown: no bidi or control characters, whitespace collapsed, at most `maxLength` characters. */
export function visibleText(text: string | undefined, maxLength: number): string | undefined {
  if (text === undefined) return undefined;
  const clean = text.replace(HIDDEN_CHARACTERS, "").replace(/\s+/g, " ").trim();
  if (!clean) return undefined;
  const characters = [...clean];
  return characters.length > maxLength ? `${characters.slice(0, maxLength - 1).join("")}…` : clean;
}
