import type Database from "better-sqlite3";
import type { AttemptRule, AttemptStore } from "../security/attempt-store.ts";
import { deleteExpiredSql } from "./expired-rows.ts";

type Counter = { count: number; windowEndsAt: number };

/**
 * Attempt counters in the "RateLimit" table. A claim is one `BEGIN IMMEDIATE`
 * transaction: SQLite's write lock serialises it against every other
 * connection (this process's and other processes'), so the read of the
 * counters and their increment cannot interleave with another claim
 * (docs/decisions/0002). `windowEndsAt` slides with every attempt:
 * windowEndsAt − memoryMs is the time of the latest one.
 */
export class SqliteAttemptStore implements AttemptStore {
  private readonly claimTx: (keys: readonly string[], now: number, rule: AttemptRule) => number;
  private readonly forgiveStatement;

  constructor(db: Database.Database) {
    const cleanup = db.prepare(deleteExpiredSql("RateLimit", "key", "windowEndsAt"));
    const read = db.prepare(`SELECT count, windowEndsAt FROM "RateLimit" WHERE key = ? AND windowEndsAt > ?`);
    const count = db.prepare(
      `INSERT INTO "RateLimit" (key, count, windowEndsAt) VALUES (@key, 1, @windowEnd)
       ON CONFLICT(key) DO UPDATE SET
         count = CASE WHEN windowEndsAt <= @now THEN 1 ELSE count + 1 END,
         windowEndsAt = @windowEnd`,
    );
    this.forgiveStatement = db.prepare(`UPDATE "RateLimit" SET count = count - 1 WHERE key = ? AND count > 0`);
    const claim = db.transaction((keys: readonly string[], now: number, rule: AttemptRule): number => {
      cleanup.run(now);
      let wait = 0;
      for (const key of keys) {
        const counter = read.get(key, now) as Counter | undefined;
        if (counter) wait = Math.max(wait, counter.windowEndsAt - rule.memoryMs + rule.delayAfter(counter.count) - now);
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
}
