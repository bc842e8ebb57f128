/**
 * The strength hint under a new password on the sign-up form (docs/decisions/0052): a rough estimate, shown as the
 * person types (JavaScript only; without it the static hint stands). It never refuses anything — the server's rule is
 * the length (accounts/password.ts) — it only tells a person typing "password1" that it is weak. The estimate is the
 * password's length times the bits of the character classes it uses, counted over its distinct characters (so "aaaa…"
 * is weak), with the most common passwords and runs like "12345678" or "qwertyui" weak whatever their length.
 */
export type PasswordStrength = "weak" | "fair" | "strong";

/** A few of the passwords every list of leaked ones begins with. */
const COMMON = new Set([
  "password", "password1", "password123", "passw0rd", "123456789", "1234567890", "12345678", "qwertyuiop", "qwerty123", "iloveyou",
  "sunshine", "princess", "football", "baseball", "welcome1", "letmein1", "abc12345", "admin123", "dragon123", "monkey123",
  "trustno1", "superman", "starwars", "whatever", "00000000", "11111111", "azertyuiop", "motdepasse", "passwort", "contraseña",
]);

const RUNS = ["abcdefghijklmnopqrstuvwxyz", "01234567890", "qwertyuiopasdfghjklzxcvbnm", "azertyuiopqsdfghjklmwxcvbn", "qwertzuiopasdfghjklyxcvbnm"];

/** Whether the whole password is a run of a keyboard row or of the alphabet or digits, forwards or backwards. */
function isRun(lower: string): boolean {
  const reversed = [...lower].reverse().join("");
  return RUNS.some((run) => run.includes(lower) || run.includes(reversed));
}

function poolSize(password: string): number {
  let pool = 0;
  if (/[a-z]/.test(password)) pool += 26;
  if (/[A-Z]/.test(password)) pool += 26;
  if (/[0-9]/.test(password)) pool += 10;
  if (/[ -/:-@[-`{-~]/.test(password)) pool += 33;
  if (/[^\x20-\x7e]/.test(password)) pool += 100;
  return pool;
}

export function passwordStrength(password: string, minLength: number): PasswordStrength | undefined {
  if (password.length === 0) return undefined;
  const lower = password.toLowerCase();
  if ([...password].length < minLength || COMMON.has(lower) || isRun(lower)) return "weak";
  const distinct = new Set(password).size;
  const effectiveLength = Math.min([...password].length, distinct * 2);
  const bits = effectiveLength * Math.log2(Math.max(poolSize(password), 2));
  if (bits < 40) return "weak";
  return bits < 64 ? "fair" : "strong";
}
