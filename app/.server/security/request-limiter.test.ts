import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ENGINES, rowOf } from "../../../tests/helpers/databases.ts";
import { useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { sql, type Database } from "../db/sql.ts";
import { SqlLimitStore } from "../stores/sql-limit-store.ts";
import { MEMORY_COUNTING_MIN_LIMIT, RequestLimiter } from "./request-limiter.ts";

/**
 * docs/architecture.md, "Abuse limits": per-address request limits hold across every process on the
 * database. Two limiters on two handles to one database (two SQLite connections, two PostgreSQL pools) stand for two
 * processes; the clock is fixed so windows are exact.
 */
describe.each(ENGINES)("RequestLimiter on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  let limiters: RequestLimiter[];
  let now: number;

  /** A limiter on the `process`-th handle of the database (0: the suite's own). */
  const open = (process = limiters.length) => {
    const db: Database = process === 0 ? shared.db : shared.others(process)[process - 1]!;
    // No timer flushes during a test: flush() is called where a second would have passed.
    const limiter = new RequestLimiter(new SqlLimitStore(db), { flushMs: 3_600_000, now: () => now });
    limiters.push(limiter);
    return limiter;
  };
  const storedCount = async (key: string) => (await rowOf<{ count: number }>(shared.db, sql`SELECT "count" FROM "RateLimit" WHERE "key" = ${key}`))?.count ?? 0;

  beforeEach(() => {
    limiters = [];
    now = 1_800_000_000_000;
  });
  afterEach(async () => {
    for (const limiter of limiters) await limiter.close();
  });

  it("allows exactly `limit` requests in a window, then refuses with the time left", async () => {
    const limiter = open();
    const results = [];
    for (let i = 0; i < 12; i++) results.push(await limiter.hit("requests:xrpc:192.0.2.1", 10, 60_000));
    expect(results.map((result) => result.allowed)).toEqual([...Array(10).fill(true), false, false]);
    expect(results[10]!.retryAfterSeconds).toBe(60);
    now += 45_000;
    expect(await limiter.hit("requests:xrpc:192.0.2.1", 10, 60_000)).toMatchObject({ allowed: false, retryAfterSeconds: 15 });
    now += 15_000;
    expect((await limiter.hit("requests:xrpc:192.0.2.1", 10, 60_000)).allowed).toBe(true);
  });

  it("never names more than one window in Retry-After, when another process opened the window with a later clock read", async () => {
    // The other process read its clock 5 ms after this one and wrote first: the window ends 60.005 s after this read.
    const other = new RequestLimiter(new SqlLimitStore(shared.others(1)[0]!), { flushMs: 3_600_000, now: () => now + 5 });
    const limiter = new RequestLimiter(new SqlLimitStore(shared.db), { flushMs: 3_600_000, now: () => now });
    limiters.push(other, limiter);
    for (let i = 0; i < 3; i++) await other.hit("requests:upgrade:2001:db8:7:8::/64", 3, 60_000);
    expect(await limiter.hit("requests:upgrade:2001:db8:7:8::/64", 3, 60_000)).toMatchObject({ allowed: false, retryAfterSeconds: 60 });
  });

  it("counts far-from-the-limit hits in memory and writes them at the next flush", async () => {
    const limiter = open();
    for (let i = 0; i < 4; i++) await limiter.hit("requests:par:192.0.2.2", 100, 60_000);
    // The first hit of a window is written (it learns the shared window); the next three wait for the flush.
    expect(await storedCount("requests:par:192.0.2.2")).toBe(1);
    await limiter.flush();
    expect(await storedCount("requests:par:192.0.2.2")).toBe(4);
  });

  it("addresses are counted separately", async () => {
    const limiter = open();
    for (let i = 0; i < 3; i++) await limiter.hit("requests:token:192.0.2.3", 3, 60_000);
    expect((await limiter.hit("requests:token:192.0.2.3", 3, 60_000)).allowed).toBe(false);
    expect((await limiter.hit("requests:token:192.0.2.4", 3, 60_000)).allowed).toBe(true);
  });

  it("two processes share one count: together they get the limit, not twice it", async () => {
    const [first, second] = [open(), open()];
    const key = "requests:xrpc:198.51.100.7";
    const limit = 100; // above MEMORY_COUNTING_MIN_LIMIT: far from it, hits are counted in memory
    let allowed = 0;
    for (let i = 0; i < 3 * limit; i++) {
      if ((await (i % 2 === 0 ? first : second).hit(key, limit, 60_000)).allowed) allowed++;
      // A second passes every few requests: both flush, as their timers would.
      if (i % 6 === 5) for (const limiter of [first, second]) await limiter.flush();
    }
    // Near the limit every hit is decided by the database; what one process still held in memory
    // when that began (at most half the limit) is the most the pair can go over.
    expect(allowed).toBeGreaterThanOrEqual(limit);
    expect(allowed).toBeLessThanOrEqual(limit * 1.5);
    // Once the shared count is over, both refuse for the rest of the window.
    expect((await first.hit(key, limit, 60_000)).allowed).toBe(false);
    expect((await second.hit(key, limit, 60_000)).allowed).toBe(false);
  });

  it("small limits are exact across processes (every hit is written), whatever order the processes' hits come in", async () => {
    const [first, second] = [open(), open()];
    // The order that let a limit of 4 pass five when small limits were counted in memory: P1, P2, P1, P2, P2, P1.
    const order = [first, second, first, second, second, first, second];
    const outcomes = [];
    for (const limiter of order) outcomes.push((await limiter!.hit("requests:par:198.51.100.8", 4, 60_000)).allowed);
    expect(outcomes).toEqual([true, true, true, true, false, false, false]);
    // Just under the threshold, uneven traffic from two processes still gets exactly the limit.
    const limit = MEMORY_COUNTING_MIN_LIMIT - 1;
    let allowed = 0;
    for (let i = 0; i < limit * 2; i++) if ((await (i % 3 === 0 ? first : second).hit("requests:par:198.51.100.9", limit, 60_000)).allowed) allowed++;
    expect(allowed).toBe(limit);
  });

  it("close() writes what is still counted in memory", async () => {
    const limiter = open();
    for (let i = 0; i < 5; i++) await limiter.hit("requests:xrpc:203.0.113.9", 1000, 60_000);
    await limiter.close();
    expect(await storedCount("requests:xrpc:203.0.113.9")).toBe(5);
  });

  it("RACE: two processes firing 40 hits at once never let more than a small limit through", async () => {
    const [first, second] = [open(), open()];
    // Below 4 every hit is decided by the database (half the limit is under the first hit's count).
    for (const limit of [1, 2, 3]) {
      const key = `requests:token:198.51.100.${limit}`;
      const burst = () => Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? first : second).hit(key, limit, 60_000)));
      expect((await burst()).filter((result) => result.allowed)).toHaveLength(limit);
      // A second burst, now that both limiters hold the key's counter: still nothing more.
      expect((await burst()).filter((result) => result.allowed)).toHaveLength(0);
      expect(await storedCount(key)).toBe(80);
    }
  });

  it("RACE: after a burst decided by the database, a limiter does not fall back to an earlier, lower count", async () => {
    const limiter = open();
    const key = "requests:xrpc:198.51.100.99";
    const results = await Promise.all(Array.from({ length: 40 }, () => limiter.hit(key, 10, 60_000)));
    expect(results.filter((result) => result.allowed)).toHaveLength(10);
    // The writes finished in any order: whichever answered last, the limiter must know the count is 40, not less.
    for (let i = 0; i < 5; i++) expect((await limiter.hit(key, 10, 60_000)).allowed).toBe(false);
  });
});
