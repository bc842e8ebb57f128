import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ENGINES, execute, openTestDatabase, rowOf, type TestDatabase, raceOn } from "../../../tests/helpers/databases.ts";
import { at, sql } from "../db/sql.ts";
import { countRows } from "../../../tests/helpers/store-fixtures.ts";
import { replayStoreContract } from "./contracts/replay-store-contract.ts";
import { REPLAYS_PER_CLEANUP, SqlReplayStore } from "./sql-replay-store.ts";

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
    const refuseInserts = async (refuse: boolean) => {
      if (engine === "sqlite") {
        await execute(test.db, refuse ? sql`CREATE TRIGGER "refuse" BEFORE INSERT ON "ReplayRecord" BEGIN SELECT RAISE(ABORT, 'refused'); END` : sql`DROP TRIGGER "refuse"`);
      } else if (refuse) {
        await execute(test.db, sql`CREATE FUNCTION "refuse"() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$ LANGUAGE plpgsql`);
        await execute(test.db, sql`CREATE TRIGGER "refuse" BEFORE INSERT ON "ReplayRecord" FOR EACH ROW EXECUTE FUNCTION "refuse"()`);
      } else {
        await execute(test.db, sql`DROP TRIGGER "refuse" ON "ReplayRecord"`);
        await execute(test.db, sql`DROP FUNCTION "refuse"()`);
      }
    };
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

    it("removes expired rows in batches of 20 on one insert in four (the first, then every fourth), keeping the table bounded", async () => {
      for (let i = 0; i < 100; i++) await insertRow(`old-${i}`, clock - 1_000 - i);
      expect(await count()).toBe(100);
      for (let call = 1; call <= 12; call++) {
        expect(await store.recordUnique("dpop:k", `fresh-${call}`, clock + 60_000)).toBe(true);
        const cleanups = Math.ceil(call / REPLAYS_PER_CLEANUP);
        expect({ call, expired: await countExpired() }).toEqual({ call, expired: 100 - 20 * cleanups });
        expect(await count()).toBe(100 - 20 * cleanups + call);
      }
      // Two more cleanups (calls 13 and 17) clear the rest; later ones find nothing to delete.
      for (let call = 13; call <= 20; call++) await store.recordUnique("dpop:k", `fresh-${call}`, clock + 60_000);
      expect(await countExpired()).toBe(0);
      expect(await count()).toBe(20);
    });

    it("cleans up on the next insert when an insert that was due failed", async () => {
      for (let i = 0; i < 30; i++) await insertRow(`old-${i}`, clock - 1_000 - i);
      await store.recordUnique("dpop:k", "first", clock + 60_000); // due: 20 removed
      for (let call = 2; call <= REPLAYS_PER_CLEANUP; call++) await store.recordUnique("dpop:k", `fresh-${call}`, clock + 60_000);
      expect(await countExpired()).toBe(10);
      // The next insert is due; the database refuses it (a trigger stands in for any failure), and nothing of its
      // step is kept, so the insert after it cleans up instead.
      await refuseInserts(true);
      await expect(store.recordUnique("dpop:k", "refused", clock + 60_000)).rejects.toThrow(/refused/);
      expect(await countExpired()).toBe(10);
      await refuseInserts(false);
      expect(await store.recordUnique("dpop:k", "after", clock + 60_000)).toBe(true);
      expect(await countExpired()).toBe(0);
    });

    it("stays bounded under steady traffic", async () => {
      // One insert per second, each live for 10 s: the table never grows beyond the 10 live rows and the new one, plus
      // what expired since the last cleanup (at most REPLAYS_PER_CLEANUP - 1 inserts ago).
      let max = 0;
      for (let i = 0; i < 200; i++) {
        clock += 1_000;
        expect(await store.recordUnique("ns", `jti-${i}`, clock + 10_000)).toBe(true);
        max = Math.max(max, await count());
      }
      expect(max).toBeLessThanOrEqual(11 + REPLAYS_PER_CLEANUP - 1);
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
