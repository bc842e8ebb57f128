/** A key's shared count in its current fixed window, as the store has it after a write. */
export type SharedCount = { count: number; windowEndsAt: number };

/** Hits to add to a key's count: `windowEndsAt` is the end of the window a fresh count starts. */
export type Hits = { key: string; delta: number; windowEndsAt: number };

/** An amount to spend from a key's budget of `limit` per window; `windowEndsAt` is the end of the window a fresh count starts. */
export type Spend = { key: string; amount: number; limit: number; windowEndsAt: number };

/** Whether a Spend was made (all of them, or none), and each key's count: after the spending, or as it stands when refused. */
export type Spent = { spent: boolean; counts: SharedCount[] };

/**
 * The shared counters every process on the database counts in (the `RateLimit` rows): the per-address request
 * counters (docs/decisions/0005) and the accounts' write budgets (docs/decisions/0045). One implementation,
 * stores/sql-limit-store.ts.
 */
export interface LimitStore {
  /**
   * Adds each entry's hits to its key's count in one transaction, starting a fresh window for a key whose window ended
   * by `now`; the counts after, in the order of `hits`.
   */
  addHits(hits: readonly Hits[], now: number): Promise<SharedCount[]>;

  /**
   * Spends each entry's amount from its key's count if every one of them stays within its limit (a count whose window
   * ended by `now` starts again from zero), and none of them otherwise: a refused spending has counted nothing once it
   * returns. No count ever passes its limit, whatever spendings of the same keys run at once in any number of
   * processes: each count is tested and taken in one statement (docs/decisions/0045).
   */
  spendWithin(spends: readonly Spend[], now: number): Promise<Spent>;
}
