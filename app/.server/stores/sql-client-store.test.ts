import { describe, expect, it } from "vitest";
import { ENGINES, rowsOf, raceOn } from "../../../tests/helpers/databases.ts";
import { countRows, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { sql } from "../db/sql.ts";
import { cachedClient as entry, cachedSizeOf as sizeOf, clientIdOf as idOf, clientStoreContract } from "./contracts/client-store-contract.ts";
import { SqlClientStore, type ClientCacheBounds } from "./sql-client-store.ts";

const NOW = 1_800_000_000_000;
const HOUR = 3_600_000;

/**
 * The client metadata cache (docs/decisions/0011) on each engine: the contract every client store keeps
 * (contracts/client-store-contract.ts, also run on the memory store in tests/helpers/memory-stores.test.ts), then what
 * only the SQL store does: the size column its byte bound sums, batch cleanup, and races between connections.
 */
describe.each(ENGINES)("SqlClientStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const open = (bounds: Partial<ClientCacheBounds> = {}, db = shared.db) => new SqlClientStore(db, { maxEntries: 100, maxBytes: 1_000_000, ...bounds });
  const cachedIds = async () => (await rowsOf<{ clientId: string }>(shared.db, sql`SELECT "clientId" FROM "Client"`)).map((row) => row.clientId);

  clientStoreContract("the ClientStore contract", async (bounds) => ({ store: open(bounds), cachedIds }));

  describe("what only the SQL store does", () => {
    it("records each entry's size in bytes, which the byte bound sums", async () => {
      const size = sizeOf(entry(1));
      const store = open({ maxBytes: Math.floor(2.5 * size) });
      const large = entry(5, size + 20);
      await store.save(idOf(5), large, NOW + 5, NOW + HOUR);
      const rows = await rowsOf<{ size: number }>(shared.db, sql`SELECT "size" FROM "Client"`);
      expect(rows).toEqual([{ size: sizeOf(large) }]);
    });

    it("saving removes a batch of other clients' expired entries", async () => {
      const store = open();
      for (let n = 0; n < 25; n++) await store.save(idOf(n), entry(n), NOW - 2 * HOUR, NOW - HOUR);
      await store.save(idOf(99), entry(99), NOW, NOW + HOUR);
      expect(await countRows(shared.db, "Client")).toBe(6);
    });

    it(`RACE: 40 saves ${raceOn(engine, 4)} never leave the cache over its bounds`, async () => {
      const size = sizeOf(entry(1));
      const stores = shared.others(4).map((db) => open({ maxEntries: 5, maxBytes: Math.floor(4.5 * size) }, db));
      await Promise.all(Array.from({ length: 40 }, (_, n) => stores[n % 4]!.save(idOf(n), entry(n), NOW + n, NOW + HOUR)));
      // Each save trims what it sees: were two at once unaware of each other's new row, both would stay.
      expect(await countRows(shared.db, "Client")).toBe(4);
      const sizes = await rowsOf<{ size: number }>(shared.db, sql`SELECT "size" FROM "Client"`);
      expect(sizes.reduce((sum, row) => sum + row.size, 0)).toBeLessThanOrEqual(4.5 * size);
    });
  });
});
