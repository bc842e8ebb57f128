import type { Guess } from "./typed-code-store.ts";

/** What confirming a deletion found: the code (counted as one guess whatever it was), or no live code at all. */
export type DeletionCodeCheck = "right" | "wrong" | "none";

/** Why the deletion step changed nothing, or the firehose sequence number of its #account event. */
export type DeletionOutcome = { deleted: true; seq: number } | { deleted: false; reason: "code-gone" | "password-changed" };

export type AccountRemoval = {
  did: string;
  /** The keyed hash of the code the person typed (already found right by `check`). */
  codeHash: string;
  /** The password hash the person's password matched: the account's must still be it. */
  passwordHash: string;
  now: number;
};

/** Deleting an account (docs/decisions/0030): confirmed by an emailed code and the password. */
export interface AccountDeletionStore {
  /**
   * Counts one guess at the account's live deletion code, atomically (never more than `maxGuesses` compared however
   * many race), without spending it: the code is spent by `remove`, after the directory has tombstoned the DID, so
   * that a failure of either step leaves a code that still works for the retry.
   */
  check(guess: Guess): Promise<DeletionCodeCheck>;
  /**
   * The single-use step, all or nothing: spends the code (it must still be live and the same), checks that the
   * password has not changed since it was verified, deletes the account with everything keyed by its DID (records,
   * repository blocks and head, blobs, preferences, sessions, codes, grants and their tokens, remembered consent,
   * passkeys, recovery links and typed codes) and its earlier firehose events, and appends the #account event
   * (active false, status deleted). Of several at once, one deletes; the others find the code gone.
   */
  remove(removal: AccountRemoval): Promise<DeletionOutcome>;
  /** The same removal for the operator's command line (no code, no password); undefined when there is no such account. */
  removeByOperator(did: string, now: number): Promise<number | undefined>;
}
