import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ENGINES, execute, openTestDatabase, rowOf, type TestDatabase, raceOn } from "../../../tests/helpers/databases.ts";
import { at, sql } from "../db/sql.ts";
import { countRows } from "../../../tests/helpers/store-fixtures.ts";
import { replayStoreContract } from "./contracts/replay-store-contract.ts";
import { SqlReplayStore } from "./sql-replay-store.ts";

/**
 * The replay store on each engine: the contract every replay store keeps (contracts/replay-store-contract.ts, also run
 * on the memory store in tests/helpers/memory-stores.test.ts), then what only the SQL store does: hashed keys, taking
 * over expired rows, batch cleanup that keeps the table bounded, and single use across connections.
 */
describe.each(ENGINES)("SqlReplayStore on %s", (engine) => {
  replayStoreContract("the ReplayStore contract", async (now) => {
    const opened = await openTestDatabase(engine);
    return { store: new SqlReplayStore(opened.db, now), kept: () => countRows(opened.db, "ReplayRecord"), close: () => opened.close() };
  });

  describe("what only the SQL store does", () => {
    let test: TestDatabase;
    let clock: number;
    const now = () => clock;
    let store: SqlReplayStore;

    beforeEach(async () => {
      test = await openTestDatabase(engine);
      clock = 1_700_000_000_000;
      store = new SqlReplayStore(test.db, now);
    });
    afterEach(() => test.close());

    const count = async () => (await rowOf<{ n: number }>(test.db, sql`SELECT COUNT(*) AS "n" FROM "ReplayRecord"`))!.n;
    const countExpired = async () => (await rowOf<{ n: number }>(test.db, sql`SELECT COUNT(*) AS "n" FROM "ReplayRecord" WHERE "expiresAt" <= ${at(clock)}`))!.n;
    const insertRow = (key: string, expiresAt: number) => execute(test.db, sql`INSERT INTO "ReplayRecord" ("key", "expiresAt") VALUES (${key}, ${at(expiresAt)})`);

    it("stores hashed keys of bounded length, not the raw value", async () => {
      const longKey = "k".repeat(10_000);
      expect(await store.recordUnique("dpop:x", longKey, clock + 60_000)).toBe(true);
      const row = await rowOf<{ key: string }>(test.db, sql`SELECT "key" FROM "ReplayRecord"`);
      expect(row!.key.length).toBeLessThanOrEqual(64);
      expect(row!.key).not.toContain("kkkk");
      expect(await store.recordUnique("dpop:x", longKey, clock + 60_000)).toBe(false);
    });

    it("takes over an expired row even when cleanup did not remove it first", async () => {
      expect(await store.recordUnique("ns", "target", clock + 1_000)).toBe(true);
      // 50 rows that expired earlier than "target": a batch of 20 need not reach "target",
      // so the insert has to take the expired row over (ON CONFLICT ... WHERE expiresAt <= now).
      for (let i = 0; i < 50; i++) await insertRow(`expired-${i}`, clock - 1);
      clock += 1_000;
      expect(await store.recordUnique("ns", "target", clock + 1_000)).toBe(true);
      expect(await store.recordUnique("ns", "target", clock + 1_000)).toBe(false);
    });

    it("removes expired rows in batches of 20 on each insert, keeping the table bounded", async () => {
      for (let i = 0; i < 100; i++) await insertRow(`old-${i}`, clock - 1_000 - i);
      expect(await count()).toBe(100);
      for (let call = 1; call <= 3; call++) {
        expect(await store.recordUnique("dpop:k", `fresh-${call}`, clock + 60_000)).toBe(true);
        expect(await countExpired()).toBe(100 - 20 * call);
        expect(await count()).toBe(100 - 20 * call + call);
      }
      // Two more calls clear the rest; further calls find nothing to delete.
      await store.recordUnique("dpop:k", "fresh-4", clock + 60_000);
      await store.recordUnique("dpop:k", "fresh-5", clock + 60_000);
      expect(await countExpired()).toBe(0);
      await store.recordUnique("dpop:k", "fresh-6", clock + 60_000);
      expect(await count()).toBe(6);
    });

    it("stays bounded under steady traffic", async () => {
      // One insert per second, each live for 10 s: the table never grows far beyond 10 live rows.
      let max = 0;
      for (let i = 0; i < 200; i++) {
        clock += 1_000;
        expect(await store.recordUnique("ns", `jti-${i}`, clock + 10_000)).toBe(true);
        max = Math.max(max, await count());
      }
      expect(max).toBeLessThanOrEqual(11);
    });

    it(`has exactly one winner when 40 calls record the same key ${raceOn(engine, 4)}`, async () => {
      // Each store on its own connection (SQLite) or pool (PostgreSQL): what several server processes see.
      const stores = Array.from({ length: 4 }, () => new SqlReplayStore(test.connect(), now));
      const results = await Promise.all(Array.from({ length: 40 }, (_, i) => stores[i % 4]!.recordUnique("ns", "contested", clock + 60_000)));
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await count()).toBe(1);
    });
  });
});
