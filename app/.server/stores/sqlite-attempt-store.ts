import type Database from "better-sqlite3";
import type { AttemptRule, AttemptStore } from "../security/attempt-store.ts";
import { deleteExpiredSql } from "./expired-rows.ts";

type Counter = { count: number; windowEndsAt: number; lastAttemptAt: number | null };

/**
 * Attempt counters in the "RateLimit" table: `windowEndsAt` is when the count
 * is forgotten (the latest failure + memory), `lastAttemptAt` the latest
 * attempt, from which the next one waits. A claim is one `BEGIN IMMEDIATE`
 * transaction: SQLite's write lock serialises it against every other
 * connection (this process's and other processes'), so the read of the
 * counters and their increment cannot interleave with another claim
 * (docs/decisions/0002).
 */
export class SqliteAttemptStore implements AttemptStore {
  private readonly claimTx: (keys: readonly string[], now: number, rule: AttemptRule) => number;
  private readonly forgiveStatement;
  private readonly failedStatement;

  constructor(db: Database.Database) {
    const cleanup = db.prepare(deleteExpiredSql("RateLimit", "key", "windowEndsAt"));
    const read = db.prepare(`SELECT count, windowEndsAt, lastAttemptAt FROM "RateLimit" WHERE key = ? AND windowEndsAt > ?`);
    // A live counter counts one more and keeps its memory; a new (or forgotten) one starts at 1 with a fresh memory.
    const count = db.prepare(
      `INSERT INTO "RateLimit" (key, count, windowEndsAt, lastAttemptAt) VALUES (@key, 1, @windowEnd, @now)
       ON CONFLICT(key) DO UPDATE SET
         count = CASE WHEN windowEndsAt <= @now THEN 1 ELSE count + 1 END,
         windowEndsAt = CASE WHEN windowEndsAt <= @now THEN @windowEnd ELSE windowEndsAt END,
         lastAttemptAt = @now`,
    );
    this.forgiveStatement = db.prepare(`UPDATE "RateLimit" SET count = count - 1 WHERE key = ? AND count > 0`);
    this.failedStatement = db.prepare(`UPDATE "RateLimit" SET windowEndsAt = MAX(windowEndsAt, ?) WHERE key = ?`);
    const claim = db.transaction((keys: readonly string[], now: number, rule: AttemptRule): number => {
      cleanup.run(now);
      let wait = 0;
      for (const key of keys) {
        const counter = read.get(key, now) as Counter | undefined;
        if (!counter) continue;
        // Counters written before lastAttemptAt existed: their memory ran from their latest attempt.
        const lastAttemptAt = counter.lastAttemptAt ?? counter.windowEndsAt - rule.memoryMs;
        wait = Math.max(wait, lastAttemptAt + rule.delayAfter(key, counter.count) - now);
      }
      if (wait > 0) return wait;
      for (const key of keys) count.run({ key, now, windowEnd: now + rule.memoryMs });
      return 0;
    });
    this.claimTx = (keys, now, rule) => claim.immediate(keys, now, rule);
  }

  claim(keys: readonly string[], now: number, rule: AttemptRule): number {
    return this.claimTx(keys, now, rule);
  }

  forgive(key: string): void {
    this.forgiveStatement.run(key);
  }

  failed(key: string, now: number, memoryMs: number): void {
    this.failedStatement.run(now + memoryMs, key);
  }
}
