import type Database from "better-sqlite3";
import { deleteExpiredSql } from "../stores/expired-rows.ts";

export type RateLimitResult = { allowed: boolean; count: number; retryAfterSeconds: number };

/**
 * Fixed-window counters in the shared SQLite database, so that the limits
 * hold across every server process using it. One UPSERT … RETURNING per hit.
 */
export class RateLimiter {
  private readonly hitStatement;
  private readonly slidingStatement;
  private readonly readStatement;
  private readonly resetStatement;
  private readonly cleanupStatement;

  /** Cleanup and count in one transaction: one commit per request. */
  private readonly countHit: (key: string, now: number, windowEnd: number) => { count: number; windowEndsAt: number };

  constructor(db: Database.Database, private readonly now: () => number = Date.now) {
    this.hitStatement = db.prepare(
      `INSERT INTO "RateLimit" (key, count, windowEndsAt) VALUES (@key, 1, @windowEnd)
       ON CONFLICT(key) DO UPDATE SET
         count = CASE WHEN windowEndsAt <= @now THEN 1 ELSE count + 1 END,
         windowEndsAt = CASE WHEN windowEndsAt <= @now THEN @windowEnd ELSE windowEndsAt END
       RETURNING count, windowEndsAt`,
    );
    this.slidingStatement = db.prepare(
      `INSERT INTO "RateLimit" (key, count, windowEndsAt) VALUES (@key, 1, @windowEnd)
       ON CONFLICT(key) DO UPDATE SET
         count = CASE WHEN windowEndsAt <= @now THEN 1 ELSE count + 1 END,
         windowEndsAt = @windowEnd`,
    );
    this.readStatement = db.prepare(`SELECT count, windowEndsAt FROM "RateLimit" WHERE key = ? AND windowEndsAt > ?`);
    this.resetStatement = db.prepare(`DELETE FROM "RateLimit" WHERE key = ?`);
    this.cleanupStatement = db.prepare(
      deleteExpiredSql("RateLimit", "key", "windowEndsAt"),
    );
    this.countHit = db.transaction((key: string, now: number, windowEnd: number) => {
      this.cleanupStatement.run(now);
      return this.hitStatement.get({ key, now, windowEnd }) as { count: number; windowEndsAt: number };
    });
  }

  /** Counts one event for `key`; allowed while the window's count is at most `limit`. */
  hit(key: string, limit: number, windowMs: number): RateLimitResult {
    const now = this.now();
    const row = this.countHit(key, now, now + windowMs);
    return { allowed: row.count <= limit, count: row.count, retryAfterSeconds: Math.max(1, Math.ceil((row.windowEndsAt - now) / 1000)) };
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
