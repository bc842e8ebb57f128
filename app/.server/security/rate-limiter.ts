import type Database from "better-sqlite3";
import { deleteExpiredSql } from "../stores/expired-rows.ts";

/**
 * Counters in the shared SQLite database for sign-in throttling, so that it
 * holds across every server process using it: each event is written, and
 * read back exactly. (Per-address request limits, hit on every API request,
 * use RequestLimiter, which writes in batches.)
 */
export class RateLimiter {
  private readonly slidingStatement;
  private readonly readStatement;
  private readonly resetStatement;
  private readonly cleanupStatement;

  constructor(db: Database.Database, private readonly now: () => number = Date.now) {
    this.slidingStatement = db.prepare(
      `INSERT INTO "RateLimit" (key, count, windowEndsAt) VALUES (@key, 1, @windowEnd)
       ON CONFLICT(key) DO UPDATE SET
         count = CASE WHEN windowEndsAt <= @now THEN 1 ELSE count + 1 END,
         windowEndsAt = @windowEnd`,
    );
    this.readStatement = db.prepare(`SELECT count, windowEndsAt FROM "RateLimit" WHERE key = ? AND windowEndsAt > ?`);
    this.resetStatement = db.prepare(`DELETE FROM "RateLimit" WHERE key = ?`);
    this.cleanupStatement = db.prepare(deleteExpiredSql("RateLimit", "key", "windowEndsAt"));
  }

  /**
   * Counts one event and keeps the count alive for `memoryMs` after this
   * event (not after the first): the window slides with every event, and
   * windowEndsAt − memoryMs is the time of the latest one.
   */
  record(key: string, memoryMs: number): void {
    const now = this.now();
    this.cleanupStatement.run(now);
    this.slidingStatement.run({ key, now, windowEnd: now + memoryMs });
  }

  /** The live count for `key` and when its window ends (0 and now when none). */
  peek(key: string): { count: number; windowEndsAt: number } {
    const now = this.now();
    return (this.readStatement.get(key, now) as { count: number; windowEndsAt: number } | undefined) ?? { count: 0, windowEndsAt: now };
  }

  reset(key: string): void {
    this.resetStatement.run(key);
  }
}
