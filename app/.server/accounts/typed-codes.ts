import { createHmac, hkdfSync, randomBytes } from "node:crypto";
import type { CodePurpose, Guess, GuessOutcome, TypedCodeStore } from "./typed-code-store.ts";

/**
 * Codes a person reads in an email and types (docs/decisions/0030): password recovery on another device, a new email
 * address, deleting the account.
 *
 * Ten characters of Crockford's base32 (no I, L, O, U: nothing to confuse on a phone), shown as two groups of five,
 * `7KQ2M-XR4PD`: 50 bits. What guards a code is, in order of strength: the guess counter (`maxGuesses` wrong guesses
 * and it is dead, counted atomically in the store, so an online attacker has `maxGuesses` chances in 2^50 per code
 * whatever the number of addresses or processes), the short lifetime, single use, and only the newest code of an
 * (account, purpose) working. Only a keyed hash is stored: HMAC-SHA256 under a key derived from the cookie secret.
 * Against someone holding a copy of the database that helps only when the secret is not in that copy
 * (ATRIUM_COOKIE_SECRET set in the environment); a generated secret lives in the database, and 2^50 HMACs within a
 * code's 15 minutes is within reach of a large attacker. Such an attacker holds the accounts' signing keys anyway.
 */
export const CODE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
export const CODE_LENGTH = 10;
/** Wrong guesses after which a code is dead: 5 chances in 2^50. */
export const MAX_CODE_GUESSES = 5;

export type TypedCodesOptions = {
  /** How long a code works. */
  lifetimeMs: number;
  /** Wrong guesses after which a code is dead. */
  maxGuesses: number;
  now: () => number;
};

/** The HMAC key of typed codes, derived from the cookie secret (a key of its own, never the secret itself). */
export function typedCodeKey(cookieSecret: string): Buffer {
  return Buffer.from(hkdfSync("sha256", cookieSecret, Buffer.alloc(0), "atrium typed code v1", 32));
}

/** A new code as the email shows it: ten characters in two groups of five. 256 is a multiple of 32: no bias. */
export function newTypedCode(): string {
  const characters = [...randomBytes(CODE_LENGTH)].map((byte) => CODE_ALPHABET[byte & 31]!).join("");
  return `${characters.slice(0, 5)}-${characters.slice(5)}`;
}

/**
 * What was typed, as the code it can be: upper case, without spaces or dashes, and with the letters Crockford's
 * base32 reads as digits (O as 0, I and L as 1). Undefined when it cannot be a code (wrong length or characters), so
 * that a slip of the finger is not counted as a guess.
 */
export function normalizeTypedCode(typed: string): string | undefined {
  const compact = typed.toUpperCase().replace(/[\s-]/g, "").replace(/O/g, "0").replace(/[IL]/g, "1");
  if (compact.length !== CODE_LENGTH) return undefined;
  return [...compact].every((character) => CODE_ALPHABET.includes(character)) ? compact : undefined;
}

/** The domain of typed codes over its store: issue one for an (account, purpose), check a guess. */
export class TypedCodes {
  constructor(
    private readonly store: TypedCodeStore,
    private readonly key: Buffer,
    private readonly options: TypedCodesOptions,
  ) {}

  get lifetimeMs(): number {
    return this.options.lifetimeMs;
  }

  /** A new code for (account, purpose), replacing the earlier one; returned once, to be emailed. */
  async issue(accountDid: string, purpose: CodePurpose, detail: string | null = null): Promise<string> {
    const code = newTypedCode();
    const now = this.options.now();
    await this.store.issue({ accountDid, purpose, codeHash: this.hash(accountDid, purpose, normalizeTypedCode(code)!), detail, createdAt: now, expiresAt: now + this.options.lifetimeMs });
    return code;
  }

  /**
   * One guess at (account, purpose)'s code. Something that cannot be a code (a slip of the finger) goes through the
   * same store step as a guess but matches nothing and is not counted: "none".
   */
  async guess(accountDid: string, purpose: CodePurpose, typed: string): Promise<GuessOutcome> {
    return this.store.guess(this.guessOf(accountDid, purpose, typed) ?? { accountDid: "", purpose, codeHash: "", now: 0, maxGuesses: 0 });
  }

  /** The store's guess for what was typed (for stores that spend the code in a step of their own), or undefined. */
  guessOf(accountDid: string, purpose: CodePurpose, typed: string): Guess | undefined {
    const code = normalizeTypedCode(typed);
    if (!code) return undefined;
    return { accountDid, purpose, codeHash: this.hash(accountDid, purpose, code), now: this.options.now(), maxGuesses: this.options.maxGuesses };
  }

  /** Whether (account, purpose) has a code that may still be typed. */
  async isLive(accountDid: string, purpose: CodePurpose): Promise<boolean> {
    return (await this.liveCode(accountDid, purpose)) !== undefined;
  }

  /** (account, purpose)'s code that may still be typed, by what it confirms (`detail`), or undefined. */
  async liveCode(accountDid: string, purpose: CodePurpose): Promise<{ detail: string | null } | undefined> {
    return this.store.findLive(accountDid, purpose, this.options.now(), this.options.maxGuesses);
  }

  /** The purpose and the account are in the MAC too: a row copied to another account or purpose matches nothing. */
  private hash(accountDid: string, purpose: CodePurpose, code: string): string {
    return createHmac("sha256", this.key).update(`${purpose}\n${accountDid}\n${code}`).digest("base64url");
  }
}
