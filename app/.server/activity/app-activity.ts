import { CleanupGate } from "../stores/expired-rows.ts";
import { boundedTarget, callTarget, dayOf, expiredDay, historyOf, type ActivityApp, type ActivityCount, type ActivityHistory } from "./activity-lines.ts";
import type { ActivityStore } from "./activity-store.ts";

/** Counts of blobs and calls that also clean a batch of expired counters: one in this many, per process. */
const COUNTS_PER_CLEANUP = 8;

/** Who made a call, as counting needs it: the account, and the app (none for the account's own password). */
export type ActingApp = { did: string; activityApp: ActivityApp | undefined };

export type AppActivityOptions = {
  /** ATRIUM_APP_ACTIVITY: off, nothing is counted (the pages say so). */
  enabled: boolean;
  now: () => number;
};

/**
 * What each app did with its access (docs/decisions/0053): the writes it made (counted in each commit's own
 * transaction: RepoWriter), the blobs it uploaded and the calls it made through the proxy (counted here, after the
 * permission check passed), and the history its page shows. Counters per day, kept 90 days, bounded per app and day.
 */
export class AppActivity {
  private readonly cleanup = new CleanupGate(COUNTS_PER_CLEANUP);

  constructor(
    private readonly store: ActivityStore,
    private readonly options: AppActivityOptions,
  ) {}

  get enabled(): boolean {
    return this.options.enabled;
  }

  /** The app a commit of `caller` counts for (RepoWriter counts it in the commit), or undefined: counting off, or no app. */
  commitApp(caller: ActingApp): ActivityApp | undefined {
    return this.options.enabled ? caller.activityApp : undefined;
  }

  /** An uploaded blob, by its stored media type. */
  async countBlob(caller: ActingApp, mimeType: string): Promise<void> {
    await this.count(caller, { kind: "blob", target: boundedTarget(mimeType), count: 1 });
  }

  /** A call passed on to `service` (`did#service`) through the proxy. */
  async countCall(caller: ActingApp, lxm: string, service: string): Promise<void> {
    await this.count(caller, { kind: "call", target: boundedTarget(callTarget(lxm, service)), count: 1 });
  }

  /** The app's history over the kept days. */
  async history(accountDid: string, app: ActivityApp): Promise<ActivityHistory> {
    return historyOf(await this.store.history(accountDid, app, expiredDay(this.options.now())));
  }

  /** Deletes the account's counters of days no longer kept (the app pages do it when they read the history). */
  async dropExpired(accountDid: string): Promise<void> {
    await this.store.dropExpired(accountDid, expiredDay(this.options.now()));
  }

  private async count(caller: ActingApp, count: ActivityCount): Promise<void> {
    const app = this.commitApp(caller);
    if (!app) return;
    const now = this.options.now();
    const cleanup = this.cleanup.due();
    try {
      await this.store.count(caller.did, app, dayOf(now), [count], now, cleanup);
    } catch (error) {
      if (cleanup) this.cleanup.missed();
      throw error;
    }
  }
}
