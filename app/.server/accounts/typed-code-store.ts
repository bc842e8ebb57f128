/**
 * What a typed code is for (docs/decisions/0030): a code is issued for one purpose and checked for one purpose, so a
 * code emailed to delete an account never resets a password. `plc-operation`: the code that lets this server sign an
 * operation on the account's DID (com.atproto.identity.signPlcOperation, docs/decisions/0050).
 */
export type CodePurpose = "recovery" | "email-update" | "account-deletion" | "sign-in" | "plc-operation";

/** A typed code as stored: only its keyed hash. Times are epoch milliseconds. */
export type StoredTypedCode = {
  accountDid: string;
  purpose: CodePurpose;
  codeHash: string;
  /** What the code confirms beyond its purpose (the new address of an email update). */
  detail: string | null;
  createdAt: number;
  expiresAt: number;
};

/** A guess's outcome: the code matched (and is spent), or it did not, or there was no live code to guess at. */
export type GuessOutcome = { kind: "spent"; detail: string | null } | { kind: "wrong" } | { kind: "none" };

export type Guess = { accountDid: string; purpose: CodePurpose; codeHash: string; now: number; maxGuesses: number };

export interface TypedCodeStore {
  /** Stores a code; the account's earlier code for that purpose stops working (and a few expired rows go). */
  issue(code: StoredTypedCode): Promise<void>;
  /**
   * One guess, atomic: counts it against the live code of (account, purpose) — at most `maxGuesses` guesses are
   * ever compared, however many race — and spends the code when the guess matches. "none" when no live code has
   * guesses left (never issued, expired, spent, or guessed out).
   */
  guess(guess: Guess): Promise<GuessOutcome>;
  /**
   * (account, purpose)'s live code with guesses left, by its detail (to decide what a page shows, and to name the
   * address an email-update code went to); undefined when there is none. Changes nothing.
   */
  findLive(accountDid: string, purpose: CodePurpose, now: number, maxGuesses: number): Promise<{ detail: string | null } | undefined>;
}
