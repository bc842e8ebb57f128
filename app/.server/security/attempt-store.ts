/**
 * Counters of attempts (sign-ins) per key, shared by every server process
 * using the database. A claim is decided and counted in one atomic step, so
 * no amount of concurrency lets more attempts through than the rule allows.
 * A counter remembers its attempts until `memoryMs` after its latest
 * failure: attempts that succeed take their count back and do not prolong
 * the memory (docs/decisions/0009).
 */

export type AttemptRule = {
  /** A key's count is forgotten this long after its latest failure. */
  memoryMs: number;
  /** How long after the latest attempt the next one may start, given how many are counted (0: at once). */
  delayAfter(key: string, count: number): number;
};

export interface AttemptStore {
  /**
   * Atomically: when no key is in its waiting period, counts one attempt on
   * every key and returns 0; otherwise counts nothing and returns the longest
   * wait in milliseconds.
   */
  claim(keys: readonly string[], now: number, rule: AttemptRule): Promise<number>;
  /** Takes one counted attempt back (it succeeded). */
  forgive(key: string): Promise<void>;
  /** The counted attempt failed: the key remembers its attempts until `memoryMs` from now. */
  failed(key: string, now: number, memoryMs: number): Promise<void>;
}
