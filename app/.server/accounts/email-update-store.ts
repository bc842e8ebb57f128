import type { Guess } from "./typed-code-store.ts";

/** What confirming a new email address did (docs/decisions/0030). */
export type EmailUpdateOutcome =
  | { kind: "updated"; previous: string; email: string }
  /** The code was wrong, dead, or for nobody. */
  | { kind: "invalid" }
  /** The code was right, but another account took the address meanwhile; the code is spent. */
  | { kind: "taken"; email: string };

export interface EmailUpdateStore {
  /**
   * The single-use step, atomic: guesses the account's `email-update` code and, when it matches, sets the address
   * it was sent to (its detail) as the account's confirmed email, unless another account holds it. Two accounts
   * confirming one address at once: one gets it, the other "taken", on both engines.
   */
  confirm(guess: Guess): Promise<EmailUpdateOutcome>;
}
