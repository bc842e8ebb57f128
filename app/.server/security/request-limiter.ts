import type Database from "better-sqlite3";
import { deleteExpiredSql } from "../stores/expired-rows.ts";

const CLEANUP_BATCH = 50;

export type RateLimitResult = { allowed: boolean; count: number; retryAfterSeconds: number };
/** Past this many tracked addresses the counters are written out and forgotten (memory stays bounded). */
const MAX_TRACKED_KEYS = 50_000;

type Counter = {
  /** End of the shared window, as the database has it. */
  windowEndsAt: number;
  /** The shared count the database returned at the last write (every process's hits up to then). */
  shared: number;
  /** Hits counted here since that write. */
  pending: number;
};

/**
 * Per-address request limits (docs/architecture.md, "Abuse limits") for the hot endpoints, shared by
 * every process on the database without a database write per request.
 *
 * Counts live in the same fixed-window rows as the other limits
 * (`RateLimit`). A hit is counted in memory while the count is well below the
 * limit (at most half of it) and written out with the others once a second;
 * once the count nears the limit, every hit is written and decided by the
 * database, so the limit itself is exact. What other processes counted is
 * seen at the latest one flush later: with several processes, an address can
 * get at most one flush interval's worth of requests past its limit before
 * the shared count catches up.
 */
export class RequestLimiter {
  private readonly counters = new Map<string, Counter>();
  private readonly write: (key: string, delta: number, now: number, windowEnd: number) => { count: number; windowEndsAt: number };
  private readonly writePending: (now: number) => void;
  private readonly timer: NodeJS.Timeout;

  constructor(
    db: Database.Database,
    options: { flushMs?: number; now?: () => number } = {},
  ) {
    const now = options.now ?? Date.now;
    this.now = now;
    const add = db.prepare(
      `INSERT INTO "RateLimit" (key, count, windowEndsAt) VALUES (@key, @delta, @windowEnd)
       ON CONFLICT(key) DO UPDATE SET
         count = CASE WHEN windowEndsAt <= @now THEN @delta ELSE count + @delta END,
         windowEndsAt = CASE WHEN windowEndsAt <= @now THEN @windowEnd ELSE windowEndsAt END
       RETURNING count, windowEndsAt`,
    );
    const cleanup = db.prepare(
      deleteExpiredSql("RateLimit", "key", "windowEndsAt", CLEANUP_BATCH),
    );
    this.write = db.transaction((key: string, delta: number, at: number, windowEnd: number) => {
      cleanup.run(at);
      return add.get({ key, delta, now: at, windowEnd }) as { count: number; windowEndsAt: number };
    });
    // One transaction (one commit) for everything counted since the last flush.
    this.writePending = db.transaction((at: number) => {
      cleanup.run(at);
      for (const [key, counter] of this.counters) {
        if (counter.windowEndsAt <= at) {
          this.counters.delete(key);
          continue;
        }
        if (counter.pending === 0) continue;
        const row = add.get({ key, delta: counter.pending, now: at, windowEnd: counter.windowEndsAt }) as { count: number; windowEndsAt: number };
        this.counters.set(key, { windowEndsAt: row.windowEndsAt, shared: row.count, pending: 0 });
      }
    });
    this.timer = setInterval(() => this.flush(), options.flushMs ?? 1000);
    this.timer.unref();
  }

  private readonly now: () => number;

  /** Counts one request for `key`; allowed while the window's count is at most `limit`. */
  hit(key: string, limit: number, windowMs: number): RateLimitResult {
    const now = this.now();
    const counter = this.counters.get(key);
    const live = counter !== undefined && counter.windowEndsAt > now;
    if (live && counter.shared + counter.pending + 1 <= limit / 2) {
      counter.pending += 1;
      return { allowed: true, count: counter.shared + counter.pending, retryAfterSeconds: wholeSecondsUntil(counter.windowEndsAt, now) };
    }
    // Near the limit (or a new window): the database decides, with this process's unwritten hits included.
    const row = this.write(key, (live ? counter.pending : 0) + 1, now, now + windowMs);
    if (this.counters.size >= MAX_TRACKED_KEYS) this.flush(true);
    this.counters.set(key, { windowEndsAt: row.windowEndsAt, shared: row.count, pending: 0 });
    return { allowed: row.count <= limit, count: row.count, retryAfterSeconds: wholeSecondsUntil(row.windowEndsAt, now) };
  }

  /** Writes the hits counted in memory; `forget` also drops every counter (they are re-read on the next hit). */
  flush(forget = false): void {
    this.writePending(this.now());
    if (forget) this.counters.clear();
  }

  /** Stops the timer and writes what is still counted in memory (server shutdown). */
  close(): void {
    clearInterval(this.timer);
    this.flush(true);
  }
}

/** Retry-After: the whole seconds until `time`, rounded up and at least 1 (RFC 9110 §10.2.3). */
function wholeSecondsUntil(time: number, now: number): number {
  return Math.max(1, Math.ceil((time - now) / 1000));
}
