import { tables } from "../db/rows.generated.ts";
import { at, get, lock, run, sql, type Database, type Program } from "../db/sql.ts";
import type { AttemptRule, AttemptStore } from "../security/attempt-store.ts";
import { expiredRowsCleanup } from "./expired-rows.ts";

const cleanupCounters = expiredRowsCleanup("RateLimit", "key", "windowEndsAt");

/**
 * Attempt counters in the "RateLimit" table: `windowEndsAt` is when the count
 * is forgotten (the latest failure + memory), `lastAttemptAt` the latest
 * attempt, from which the next one waits. A claim reads its counters and then
 * counts on them, so it is one transaction that first locks its keys (in a
 * fixed order, so two claims never wait for each other in a cycle): no other
 * claim of any process can read the same counters between the read and the
 * count (docs/decisions/0009, 0017).
 */
export class SqlAttemptStore implements AttemptStore {
  constructor(private readonly db: Database) {}

  async claim(keys: readonly string[], now: number, rule: AttemptRule) {
    const ordered = [...new Set(keys)].sort();
    return this.db.transaction(function* (): Program<number> {
      for (const key of ordered) yield* lock(`attempts:${key}`);
      yield* run(cleanupCounters(now));
      let wait = 0;
      for (const key of ordered) {
        const counter = yield* get(tables.RateLimit.pick("count", "windowEndsAt", "lastAttemptAt"), sql`SELECT "count", "windowEndsAt", "lastAttemptAt" FROM "RateLimit"
          WHERE "key" = ${key} AND "windowEndsAt" > ${at(now)}`);
        if (!counter) continue;
        // Counters written before lastAttemptAt existed: their memory ran from their latest attempt.
        const lastAttemptAt = counter.lastAttemptAt ?? counter.windowEndsAt - rule.memoryMs;
        // An attempt stamped after this claim's `now` (a claim that read its clock later but took the lock first, or
        // another process's clock) is the latest one, just made: never a time in the future to wait for on top.
        const sinceLast = Math.max(0, now - lastAttemptAt);
        wait = Math.max(wait, rule.delayAfter(key, counter.count) - sinceLast);
      }
      if (wait > 0) return wait;
      // A live counter counts one more and keeps its memory; a new (or forgotten) one starts at 1 with a fresh memory.
      const windowEnd = at(now + rule.memoryMs);
      for (const key of ordered) {
        yield* run(sql`INSERT INTO "RateLimit" ("key", "count", "windowEndsAt", "lastAttemptAt") VALUES (${key}, 1, ${windowEnd}, ${at(now)})
          ON CONFLICT ("key") DO UPDATE SET
            "count" = CASE WHEN "RateLimit"."windowEndsAt" <= ${at(now)} THEN 1 ELSE "RateLimit"."count" + 1 END,
            "windowEndsAt" = CASE WHEN "RateLimit"."windowEndsAt" <= ${at(now)} THEN ${windowEnd} ELSE "RateLimit"."windowEndsAt" END,
            "lastAttemptAt" = ${at(now)}`);
      }
      return 0;
    });
  }

  async forgive(key: string) {
    return this.db.execute(function* (): Program<void> {
      yield* run(sql`UPDATE "RateLimit" SET "count" = "count" - 1 WHERE "key" = ${key} AND "count" > 0`);
    });
  }

  async failed(key: string, now: number, memoryMs: number) {
    const until = at(now + memoryMs);
    return this.db.execute(function* (): Program<void> {
      yield* run(sql`UPDATE "RateLimit" SET "windowEndsAt" = ${until} WHERE "key" = ${key} AND "windowEndsAt" < ${until}`);
    });
  }
}
