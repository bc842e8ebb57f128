/**
 * How hard a new password looks to guess, for the feedback shown as it is typed (issue 28, borrowed from the
 * reference provider, which shows a meter on its sign-up and reset forms). A rough estimate, in the spirit of NIST SP
 * 800-63B §5.1.1.2 ("verifiers SHOULD offer guidance to the subscriber ... such as a password-strength meter"): the
 * length counts most, the kinds of character a little, and what guessers try first (one character repeated, a run
 * like "abcd" or "1234", a word such as "password") counts for almost nothing. Only advice: the server's rule is the
 * minimum length (docs/decisions/0020), and nothing is refused for a low estimate.
 */

export type PasswordStrength = "too-short" | "weak" | "fair" | "strong" | "very-strong";

/** The levels in order, for a meter's segments. */
export const STRENGTH_LEVELS: readonly PasswordStrength[] = ["too-short", "weak", "fair", "strong", "very-strong"];

/** What guessers try first, in lower case: a password containing one of these gets nothing for that part. */
const COMMON_PARTS = ["password", "passwort", "motdepasse", "contraseña", "senha", "qwerty", "azerty", "letmein", "welcome", "iloveyou", "admin", "bluesky"];

/** Bits per character of each kind a password draws from (log2 of the kind's size). */
function poolBits(password: string): number {
  let pool = 0;
  if (/[a-z]/.test(password)) pool += 26;
  if (/[A-Z]/.test(password)) pool += 26;
  if (/[0-9]/.test(password)) pool += 10;
  if (/[^a-zA-Z0-9\p{L}]/u.test(password)) pool += 33;
  if (/[^\p{ASCII}]/u.test(password)) pool += 100;
  return Math.log2(Math.max(pool, 2));
}

/** The characters left once repeats, runs ("abcd", "4321") and common words are taken out: what a guesser must still find. */
function effectiveLength(password: string): number {
  let text = password.toLowerCase();
  for (const part of COMMON_PARTS) text = text.split(part).join("\u0000");
  const characters = [...text];
  let length = 0;
  for (let i = 0; i < characters.length; i++) {
    const current = characters[i]!.codePointAt(0)!;
    const previous = i > 0 ? characters[i - 1]!.codePointAt(0)! : undefined;
    // A common word (now one placeholder), the same character again, or the next or previous one: next to nothing.
    if (current === 0 || previous === current || previous === current - 1 || previous === current + 1) length += 0.25;
    else length += 1;
  }
  return length;
}

/** The estimate for a password of at least `minLength` characters (shorter: "too-short"). */
export function passwordStrength(password: string, minLength: number): PasswordStrength {
  if ([...password].length < minLength) return "too-short";
  const bits = effectiveLength(password) * poolBits(password);
  if (bits < 40) return "weak";
  if (bits < 60) return "fair";
  if (bits < 80) return "strong";
  return "very-strong";
}
