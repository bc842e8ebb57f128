import type { Hits, LimitStore, SharedCount } from "./limit-store.ts";

export type RateLimitResult = { allowed: boolean; count: number; retryAfterSeconds: number };
/**
 * Below this limit every hit is decided by the database, so the limit is exact
 * across processes: counting in memory lets each process run up to half the
 * limit ahead of the shared count, which for a small limit would be a large
 * part of it.
 */
export const MEMORY_COUNTING_MIN_LIMIT = 50;
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
 * database, so the limit itself is exact; limits under
 * MEMORY_COUNTING_MIN_LIMIT are always decided there. What other processes counted is
 * seen at the latest one flush later: with several processes, an address can
 * get at most one flush interval's worth of requests past its limit before
 * the shared count catches up.
 */
export class RequestLimiter {
  private readonly counters = new Map<string, Counter>();
  private readonly timer: NodeJS.Timeout;
  private readonly now: () => number;
  /** The flush under way, if any: the next one waits for it, so counts are never written twice. */
  private flushing: Promise<void> | undefined;
  private readonly onFlushError: (error: unknown) => void;

  constructor(
    private readonly store: LimitStore,
    options: { flushMs?: number; now?: () => number; onFlushError?: (error: unknown) => void } = {},
  ) {
    this.now = options.now ?? Date.now;
    this.onFlushError = options.onFlushError ?? (() => undefined);
    // A failed flush keeps its counts in memory for the next one: nothing counted is lost.
    this.timer = setInterval(() => void this.flush().catch(this.onFlushError), options.flushMs ?? 1000);
    this.timer.unref();
  }

  /** Counts one request for `key`; allowed while the window's count is at most `limit`. */
  async hit(key: string, limit: number, windowMs: number): Promise<RateLimitResult> {
    return this.countInMemory(key, limit) ?? this.decide(key, limit, windowMs);
  }

  /**
   * The hot path: counts one request for `key` in memory and answers at once while the count is well below the limit;
   * undefined when the database must decide (`decide`, which then counts it).
   */
  countInMemory(key: string, limit: number): RateLimitResult | undefined {
    const now = this.now();
    const counter = this.counters.get(key);
    if (counter === undefined || counter.windowEndsAt <= now || limit < MEMORY_COUNTING_MIN_LIMIT) return undefined;
    if (counter.shared + counter.pending + 1 > limit / 2) return undefined;
    counter.pending += 1;
    return { allowed: true, count: counter.shared + counter.pending, retryAfterSeconds: wholeSecondsUntil(counter.windowEndsAt, now) };
  }

  /** Counts one request for `key` in the database, with this process's unwritten hits: near the limit, or a new window. */
  async decide(key: string, limit: number, windowMs: number): Promise<RateLimitResult> {
    const now = this.now();
    const counter = this.counters.get(key);
    const live = counter !== undefined && counter.windowEndsAt > now;
    const delta = (live ? counter.pending : 0) + 1;
    if (live) counter.pending = 0;
    const [row] = await this.store.addHits([{ key, delta, windowEndsAt: now + windowMs }], now);
    // The window may have been opened by another process whose clock read came after ours (its write went first):
    // the time left is read again now, and a Retry-After never names more than one window.
    return this.decided(key, row!, limit, Math.max(row!.windowEndsAt - windowMs, this.now()));
  }

  private decided(key: string, row: SharedCount, limit: number, now: number): RateLimitResult {
    if (this.counters.size >= MAX_TRACKED_KEYS && !this.counters.has(key)) void this.flush(true).catch(this.onFlushError);
    const counter = this.counters.get(key);
    // Hits counted here while the write was under way stay pending on top of the shared count.
    this.counters.set(key, { windowEndsAt: row.windowEndsAt, shared: row.count, pending: counter && counter.windowEndsAt === row.windowEndsAt ? counter.pending : 0 });
    return { allowed: row.count <= limit, count: row.count, retryAfterSeconds: wholeSecondsUntil(row.windowEndsAt, now) };
  }

  /** Writes the hits counted in memory, one transaction for all; `forget` also drops every counter (re-read on the next hit). */
  async flush(forget = false): Promise<void> {
    if (this.flushing) return this.flushing.then(() => this.flush(forget));
    const now = this.now();
    const batch: Hits[] = [];
    for (const [key, counter] of this.counters) {
      if (counter.windowEndsAt <= now) {
        this.counters.delete(key);
      } else if (counter.pending > 0) {
        batch.push({ key, delta: counter.pending, windowEndsAt: counter.windowEndsAt });
        counter.pending = 0;
      }
    }
    if (forget) this.counters.clear();
    // Nothing counted since the last flush: no transaction (expired rows go with the next write that has one).
    if (batch.length === 0) return;
    const restore = () => {
      for (const { key, delta, windowEndsAt } of batch) {
        const counter = this.counters.get(key);
        if (counter) counter.pending += delta;
        else this.counters.set(key, { windowEndsAt, shared: 0, pending: delta });
      }
    };
    const apply = (rows: SharedCount[]) => {
      if (forget) return;
      rows.forEach((row, index) => {
        const counter = this.counters.get(batch[index]!.key);
        if (counter) Object.assign(counter, { windowEndsAt: row.windowEndsAt, shared: row.count });
      });
    };
    this.flushing = this.store.addHits(batch, now).then(apply, (error: unknown) => {
      restore();
      throw error;
    });
    try {
      await this.flushing;
    } finally {
      this.flushing = undefined;
    }
  }

  /** Stops the timer and writes what is still counted in memory (server shutdown). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush(true);
  }
}

/** Retry-After: the whole seconds until `time`, rounded up and at least 1 (RFC 9110 §10.2.3). */
function wholeSecondsUntil(time: number, now: number): number {
  return Math.max(1, Math.ceil((time - now) / 1000));
}
