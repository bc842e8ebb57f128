import { tables } from "../db/rows.generated.ts";
import { at, get, run, sql, type Database, type Program } from "../db/sql.ts";
import type { Hits, LimitStore, SharedCount } from "../security/limit-store.ts";
import { expiredRowsCleanup } from "./expired-rows.ts";

const CLEANUP_BATCH = 50;
const cleanupCounters = expiredRowsCleanup("RateLimit", "key", "windowEndsAt", CLEANUP_BATCH);

export class SqlLimitStore implements LimitStore {
  constructor(private readonly db: Database) {}

  async addHits(hits: readonly Hits[], now: number): Promise<SharedCount[]> {
    return this.db.transaction(function* (): Program<SharedCount[]> {
      yield* run(cleanupCounters(now));
      const counts: SharedCount[] = [];
      for (const { key, delta, windowEndsAt } of hits) counts.push(yield* addHits(key, delta, now, windowEndsAt));
      return counts;
    });
  }
}

/** Adds `delta` hits to the key's shared count (a fresh window once the last one ended); the count and window after. */
function* addHits(key: string, delta: number, now: number, windowEnd: number): Program<SharedCount> {
  const row = yield* get(tables.RateLimit.pick("count", "windowEndsAt"), sql`INSERT INTO "RateLimit" ("key", "count", "windowEndsAt") VALUES (${key}, ${delta}, ${at(windowEnd)})
    ON CONFLICT ("key") DO UPDATE SET
      "count" = CASE WHEN "RateLimit"."windowEndsAt" <= ${at(now)} THEN ${delta} ELSE "RateLimit"."count" + ${delta} END,
      "windowEndsAt" = CASE WHEN "RateLimit"."windowEndsAt" <= ${at(now)} THEN ${at(windowEnd)} ELSE "RateLimit"."windowEndsAt" END
    RETURNING "count", "windowEndsAt"`);
  if (!row) throw new Error("The request counter was not written");
  return row;
}
