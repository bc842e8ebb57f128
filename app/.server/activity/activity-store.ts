import type { ActivityApp, ActivityCount, ActivityRow } from "./activity-lines.ts";

/**
 * The apps' activity counters (docs/decisions/0053), one implementation: stores/sql-activity-store.ts. A commit's
 * writes are counted inside the commit's own transaction (RepoStore.applyCommit), the rest here.
 */
export interface ActivityStore {
  /**
   * Adds `counts` to the app's counters of `day` (UTC midnight, epoch ms), `now` as their last time: a target the day
   * has not seen counts as itself while the kind has fewer than MAX_TARGETS_PER_KIND targets that day, on the kind's
   * overflow otherwise. Counts of one app are taken in turns, so the cap holds whatever runs at once. `cleanup`: also
   * deletes a batch of rows, of any app, older than the kept days.
   */
  count(accountDid: string, app: ActivityApp, day: number, counts: readonly ActivityCount[], now: number, cleanup: boolean): Promise<void>;
  /** The app's counters of the days after `expiredDay`, newest day first. */
  history(accountDid: string, app: ActivityApp, expiredDay: number): Promise<ActivityRow[]>;
  /** Deletes the account's counters older than the kept days (a page read of them does it; counts clean a batch). */
  dropExpired(accountDid: string, expiredDay: number): Promise<void>;
}
