/** A key's shared count in its current fixed window, as the store has it after a write. */
export type SharedCount = { count: number; windowEndsAt: number };

/** Hits to add to a key's count: `windowEndsAt` is the end of the window a fresh count starts. */
export type Hits = { key: string; delta: number; windowEndsAt: number };

/**
 * The per-address request counters every process on the database adds its hits to (the `RateLimit` rows,
 * docs/decisions/0005). One implementation, stores/sql-limit-store.ts.
 */
export interface LimitStore {
  /**
   * Adds each entry's hits to its key's count in one transaction, starting a fresh window for a key whose window ended
   * by `now`; the counts after, in the order of `hits`.
   */
  addHits(hits: readonly Hits[], now: number): Promise<SharedCount[]>;
}
