import { describe, expect, it } from "vitest";
import { ENGINES, raceOn, rowOf } from "../../../tests/helpers/databases.ts";
import { raceAgainstHeldWrite } from "../../../tests/helpers/postgres.ts";
import { useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import type { PostgresDatabase } from "../db/postgres-database.ts";
import { at, sql } from "../db/sql.ts";
import { SqlLimitStore } from "./sql-limit-store.ts";

/** The shared per-address counters (docs/decisions/0005): fixed windows, batches in one transaction, exact sums. */
describe.each(ENGINES)("SqlLimitStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const T = 1_800_000_000_000;
  const stored = async (key: string) => rowOf<{ count: number; windowEndsAt: number }>(shared.db, sql`SELECT "count", "windowEndsAt" FROM "RateLimit" WHERE "key" = ${key}`);

  it("starts a window with the first hits and adds later hits to it", async () => {
    const store = new SqlLimitStore(shared.db);
    expect(await store.addHits([{ key: "a", delta: 3, windowEndsAt: T + 60_000 }], T)).toEqual([{ count: 3, windowEndsAt: T + 60_000 }]);
    // A later hit names a later window end: the window already open stands.
    expect(await store.addHits([{ key: "a", delta: 2, windowEndsAt: T + 90_000 }], T + 30_000)).toEqual([{ count: 5, windowEndsAt: T + 60_000 }]);
    expect(await stored("a")).toEqual({ count: 5, windowEndsAt: T + 60_000 });
  });

  it("starts a fresh window once the last one ended", async () => {
    const store = new SqlLimitStore(shared.db);
    await store.addHits([{ key: "b", delta: 9, windowEndsAt: T + 60_000 }], T);
    expect(await store.addHits([{ key: "b", delta: 1, windowEndsAt: T + 120_000 }], T + 60_000)).toEqual([{ count: 1, windowEndsAt: T + 120_000 }]);
  });

  it("answers a batch in its order, each key on its own", async () => {
    const store = new SqlLimitStore(shared.db);
    await store.addHits([{ key: "d", delta: 4, windowEndsAt: T + 60_000 }], T);
    const counts = await store.addHits(
      [
        { key: "c", delta: 1, windowEndsAt: T + 60_000 },
        { key: "d", delta: 2, windowEndsAt: T + 60_000 },
      ],
      T + 1_000,
    );
    expect(counts.map((count) => count.count)).toEqual([1, 6]);
  });

  it("deletes a few ended windows with each write (lazy expiry)", async () => {
    const store = new SqlLimitStore(shared.db);
    for (let i = 0; i < 3; i++) await store.addHits([{ key: `old-${i}`, delta: 1, windowEndsAt: T - 1 }], T - 60_000);
    await store.addHits([{ key: "new", delta: 1, windowEndsAt: T + 60_000 }], T);
    const left = await rowOf<{ n: number }>(shared.db, sql`SELECT COUNT(*) AS "n" FROM "RateLimit" WHERE "windowEndsAt" <= ${at(T)}`);
    expect(Number(left!.n)).toBe(0);
  });

  it(`RACE: 40 writes to one key ${raceOn(engine, 4)}: the count is their exact sum`, async () => {
    const stores = shared.others(4).map((db) => new SqlLimitStore(db));
    await Promise.all(Array.from({ length: 40 }, (_, i) => stores[i % 4]!.addHits([{ key: "contested", delta: 1 + (i % 3), windowEndsAt: T + 60_000 }], T)));
    const sum = Array.from({ length: 40 }, (_, i) => 1 + (i % 3)).reduce((a, b) => a + b, 0);
    expect(await stored("contested")).toEqual({ count: sum, windowEndsAt: T + 60_000 });
  });

  it("spends from every budget at once while each has room, and from none once one would pass its limit", async () => {
    const store = new SqlLimitStore(shared.db);
    const spends = (points: number, bytes: number, now = T) => [
      { key: "points-hour", amount: points, limit: 10, windowEndsAt: now + 3_600_000 },
      { key: "bytes-hour", amount: bytes, limit: 1_000, windowEndsAt: now + 3_600_000 },
    ];
    expect(await store.spendWithin(spends(6, 600), T)).toEqual({ spent: true, counts: [{ count: 6, windowEndsAt: T + 3_600_000 }, { count: 600, windowEndsAt: T + 3_600_000 }] });
    // The points would fit (10), the bytes would not (1 100): nothing is spent, and the counts are told as they stand.
    expect(await store.spendWithin(spends(4, 500, T + 1), T + 1)).toEqual({ spent: false, counts: [{ count: 6, windowEndsAt: T + 3_600_000 }, { count: 600, windowEndsAt: T + 3_600_000 }] });
    expect(await store.spendWithin(spends(4, 400, T + 2), T + 2)).toMatchObject({ spent: true, counts: [{ count: 10 }, { count: 1_000 }] });
    expect(await store.spendWithin(spends(1, 0, T + 3), T + 3)).toMatchObject({ spent: false });
    expect(await stored("points-hour")).toEqual({ count: 10, windowEndsAt: T + 3_600_000 });
    // Once the window ended, the budget is whole again, in a window that starts then.
    expect(await store.spendWithin(spends(10, 1_000, T + 3_600_000), T + 3_600_000)).toEqual({ spent: true, counts: [{ count: 10, windowEndsAt: T + 7_200_000 }, { count: 1_000, windowEndsAt: T + 7_200_000 }] });
  });

  it(`RACE: 40 spendings of 3 from a budget of 30 ${raceOn(engine, 4)}: exactly 10 are made, and the count is 30`, async () => {
    const stores = shared.others(4).map((db) => new SqlLimitStore(db));
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        stores[i % 4]!.spendWithin(
          [
            { key: "budget-hour", amount: 3, limit: 30, windowEndsAt: T + 3_600_000 },
            { key: "budget-day", amount: 3, limit: 1_000, windowEndsAt: T + 86_400_000 },
          ],
          T,
        ),
      ),
    );
    expect(results.filter((result) => result.spent)).toHaveLength(10);
    expect(await stored("budget-hour")).toEqual({ count: 30, windowEndsAt: T + 3_600_000 });
    expect(await stored("budget-day")).toEqual({ count: 30, windowEndsAt: T + 86_400_000 });
  });
});

/**
 * docs/decisions/0040: a write's lazy cleanup picks ended windows from its snapshot; a window another process restarts
 * meanwhile must keep the count of its first hits. On PostgreSQL the cleanup's DELETE waits for the restarting
 * transaction's row lock and then re-checks only its own WHERE: were the ended window's test only in its subquery, it
 * would delete the restarted count, and every address could run past its limit at each window's start.
 */
describe("SqlLimitStore on postgresql: a cleanup racing a window's restart", () => {
  const shared = useSharedDatabase("postgresql");
  const T = 1_800_000_000_000;

  it("RACE (two connections): the restarted window keeps its count while another process's cleanup waits for it", async () => {
    const store = new SqlLimitStore(shared.db);
    await store.addHits([{ key: "restarting", delta: 5, windowEndsAt: T }], T - 60_000);
    await raceAgainstHeldWrite(
      shared.others(1)[0] as PostgresDatabase,
      // Another process's first hit of the next window (addHits's upsert restarts an ended window), not yet committed.
      (client) => client.query(`UPDATE "RateLimit" SET "count" = 1, "windowEndsAt" = $1 WHERE "key" = 'restarting'`, [new Date(T + 60_000).toISOString()]),
      // A hit on another key at T: its cleanup finds the "restarting" window ended and must wait for the row.
      () => store.addHits([{ key: "other", delta: 1, windowEndsAt: T + 60_000 }], T),
    );
    expect(await rowOf(shared.db, sql`SELECT "count", "windowEndsAt" FROM "RateLimit" WHERE "key" = 'restarting'`)).toEqual({ count: 1, windowEndsAt: T + 60_000 });
  });
});
