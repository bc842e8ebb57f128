import { tables } from "../db/rows.generated.ts";
import { all, at, get, run, sql, statementOf, type Database, type Program } from "../db/sql.ts";
import type { Hits, LimitStore, SharedCount, Spend, Spent } from "../security/limit-store.ts";
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

  async spendWithin(spends: readonly Spend[], now: number): Promise<Spent> {
    if (spends.length === 0) return { spent: true, counts: [] };
    const ordered = [...spends].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    // An amount larger than its whole budget never fits: refused without writing (a fresh row would take it whole).
    const charged = ordered.some((spend) => spend.amount > spend.limit) ? [] : await this.db.atomicStep({ postgresql: () => spend(ordered, now), sqlite: () => spend(ordered, now) });
    if (charged.length === ordered.length) {
      return { spent: true, counts: spends.map((wanted) => charged.find((row) => row.key === wanted.key)!).map(({ count, windowEndsAt }) => ({ count, windowEndsAt })) };
    }
    // Refused: what the statement took from the budgets that had room is given back, and the counts are told as they stand.
    return this.db.transaction(function* (): Program<Spent> {
      for (const row of charged) {
        const amount = ordered.find((wanted) => wanted.key === row.key)!.amount;
        yield* run(sql`UPDATE "RateLimit" SET "count" = "count" - ${amount} WHERE "key" = ${row.key} AND "windowEndsAt" = ${at(row.windowEndsAt)}`);
      }
      const counts: SharedCount[] = [];
      for (const { key, windowEndsAt } of spends) counts.push(yield* currentCount(key, now, windowEndsAt));
      return { spent: false, counts };
    });
  }
}

/** The most budgets one spending names (SPEND_STATEMENTS has a statement for each number up to it). */
const MAX_SPENDS = 4;

/**
 * One statement that takes each amount from its budget where the budget has room for it (a window that ended starts
 * again), on both engines: the upsert's WHERE is tested against the row as it stands once the statement holds it (on
 * PostgreSQL after waiting for a concurrent spending's row lock), so no budget ever passes its limit, whatever runs at
 * once. The keys come in one order, so two spendings lock the same rows in the same order. Only the rows it changed are
 * returned: fewer than asked means a budget refused.
 */
const SPEND_STATEMENTS = Array.from({ length: MAX_SPENDS }, (_, index) => {
  const rows = index + 1;
  const newCount = `CASE WHEN "RateLimit"."windowEndsAt" <= ? THEN excluded."count" ELSE "RateLimit"."count" + excluded."count" END`;
  return statementOf(`INSERT INTO "RateLimit" ("key", "count", "windowEndsAt") VALUES ${Array(rows).fill("(?, ?, ?)").join(", ")}
    ON CONFLICT ("key") DO UPDATE SET "count" = ${newCount},
      "windowEndsAt" = CASE WHEN "RateLimit"."windowEndsAt" <= ? THEN excluded."windowEndsAt" ELSE "RateLimit"."windowEndsAt" END
    WHERE ${newCount} <= CASE "RateLimit"."key" ${"WHEN ? THEN CAST(? AS INTEGER) ".repeat(rows)}END
    RETURNING "key", "count", "windowEndsAt"`);
});

function* spend(ordered: readonly Spend[], now: number): Program<Array<SharedCount & { key: string }>> {
  const statement = SPEND_STATEMENTS[ordered.length - 1];
  if (!statement) throw new Error(`A spending names at most ${MAX_SPENDS} budgets`);
  const values = ordered.flatMap(({ key, amount, windowEndsAt }) => [key, amount, at(windowEndsAt)]);
  const limits = ordered.flatMap(({ key, limit }) => [key, limit]);
  return yield* all(tables.RateLimit.pick("key", "count", "windowEndsAt"), statement(...values, at(now), at(now), at(now), ...limits));
}

/** A key's count in its live window; zero, in the window a fresh count would start, when there is none. */
function* currentCount(key: string, now: number, freshWindowEnd: number): Program<SharedCount> {
  const row = yield* get(tables.RateLimit.pick("count", "windowEndsAt"), sql`SELECT "count", "windowEndsAt" FROM "RateLimit" WHERE "key" = ${key}`);
  return row && row.windowEndsAt > now ? row : { count: 0, windowEndsAt: freshWindowEnd };
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
