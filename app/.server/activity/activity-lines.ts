import { DAY } from "../util/time.ts";

/*
 * What each app did with its access (docs/decisions/0053): counters per app, per UTC day, per kind of act and what it
 * was done to. Framework-free: the store counts (stores/sql-activity-store.ts), the service decides what to count
 * (app-activity.ts), the app's page reads the history back (screens/account/app-page.ts).
 */

/** The app calls are counted for: an OAuth client (`oauth:<client_id>`) or an app password (`app-password:<id>`). */
export type ActivityApp = `oauth:${string}` | `app-password:${string}`;

export function oauthApp(clientId: string): ActivityApp {
  return `oauth:${clientId}`;
}

export function appPasswordApp(id: string): ActivityApp {
  return `app-password:${id}`;
}

/** Records created, updated or deleted (per collection), blobs uploaded (per media type), calls made through the proxy (per method and service). */
export type ActivityKind = "create" | "update" | "delete" | "blob" | "call";

export const ACTIVITY_KINDS: readonly ActivityKind[] = ["create", "update", "delete", "blob", "call"];

/**
 * One counter's increment: `target` is a collection's NSID, a media type, or "<method> <service>" for a call. The
 * empty target is the kind's overflow: what passed the day's cap of targets.
 */
export type ActivityCount = { kind: ActivityKind; target: string; count: number };

/** How long the history is kept: this many days, today's included; older days are deleted lazily. */
export const ACTIVITY_DAYS = 90;

/**
 * Distinct targets counted per app, per day, per kind; a further one is counted on the kind's overflow row (target
 * ""). So an app's history costs at most (MAX_TARGETS_PER_KIND + 1) rows per kind and day, whatever it does: the
 * bound the storage test measures (docs/decisions/0053).
 */
export const MAX_TARGETS_PER_KIND = 20;

/** The longest target kept as it is (a collection or method NSID is at most 317 characters; a media type 255). */
export const MAX_TARGET_LENGTH = 512;

/** The start (UTC midnight, epoch ms) of the day `now` falls in. */
export function dayOf(now: number): number {
  return Math.floor(now / DAY) * DAY;
}

/** The newest day no longer kept at `now`: rows of this day and older are deleted. */
export function expiredDay(now: number): number {
  return dayOf(now) - ACTIVITY_DAYS * DAY;
}

/** A call's target: its method and the service it went to (`did#service`). */
export function callTarget(lxm: string, service: string): string {
  return `${lxm} ${service}`;
}

/** The method and service of a call's target. */
export function splitCallTarget(target: string): { lxm: string; service: string } {
  const space = target.indexOf(" ");
  return space < 0 ? { lxm: target, service: "" } : { lxm: target.slice(0, space), service: target.slice(space + 1) };
}

/** The counts of a commit's writes: one per action and collection, summed. */
export function writeCounts(results: ReadonlyArray<{ action: "create" | "update" | "delete"; collection: string }>): ActivityCount[] {
  const counts = new Map<string, ActivityCount>();
  for (const { action, collection } of results) {
    const key = `${action} ${collection}`;
    const existing = counts.get(key);
    if (existing) existing.count++;
    else counts.set(key, { kind: action, target: boundedTarget(collection), count: 1 });
  }
  return [...counts.values()];
}

/** A target within MAX_TARGET_LENGTH (what checked input gives is shorter; a longer one counts as overflow). */
export function boundedTarget(target: string): string {
  return target.length > MAX_TARGET_LENGTH ? "" : target;
}

/** A counted commit: the app, the day and its counts (stores/sql-repo-store.ts counts them in the commit's transaction). */
export type CommitActivity = { app: ActivityApp; day: number; counts: ActivityCount[] };

/** One stored counter, as the history reads it back. */
export type ActivityRow = { day: number; kind: ActivityKind; target: string; count: number; lastAt: number };

/** One line of an app's history: a kind and target with its count and last time, over the days read. */
export type ActivityLine = { kind: ActivityKind; target: string; count: number; lastAt: number };

/** An app's history: its lines over the kept days (most recent first), the same per day, and its last act. */
export type ActivityHistory = { lines: ActivityLine[]; days: Array<{ day: number; lines: ActivityLine[] }>; lastAt: number | undefined };

function byRecency(a: ActivityLine, b: ActivityLine): number {
  return b.lastAt - a.lastAt || ACTIVITY_KINDS.indexOf(a.kind) - ACTIVITY_KINDS.indexOf(b.kind) || (a.target < b.target ? -1 : a.target > b.target ? 1 : 0);
}

/** Sums stored rows into the history the app's page shows. */
export function historyOf(rows: readonly ActivityRow[]): ActivityHistory {
  const totals = new Map<string, ActivityLine>();
  const days = new Map<number, ActivityLine[]>();
  let lastAt: number | undefined;
  for (const row of rows) {
    const key = `${row.kind} ${row.target}`;
    const total = totals.get(key);
    if (total) {
      total.count += row.count;
      total.lastAt = Math.max(total.lastAt, row.lastAt);
    } else {
      totals.set(key, { kind: row.kind, target: row.target, count: row.count, lastAt: row.lastAt });
    }
    const day = days.get(row.day) ?? [];
    day.push({ kind: row.kind, target: row.target, count: row.count, lastAt: row.lastAt });
    days.set(row.day, day);
    lastAt = Math.max(lastAt ?? 0, row.lastAt);
  }
  return {
    lines: [...totals.values()].sort(byRecency),
    days: [...days.entries()].sort(([a], [b]) => b - a).map(([day, lines]) => ({ day, lines: lines.sort(byRecency) })),
    lastAt,
  };
}
