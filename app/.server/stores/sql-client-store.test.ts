import { describe, expect, it } from "vitest";
import { ENGINES, rowsOf, raceOn } from "../../../tests/helpers/databases.ts";
import { countRows, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { sql } from "../db/sql.ts";
import type { CachedClient } from "../oauth/client/client-store.ts";
import { SqlClientStore, type ClientCacheBounds } from "./sql-client-store.ts";

const NOW = 1_800_000_000_000;
const HOUR = 3_600_000;

/** A cached client; every entry of the same `nameLength` has the same size in bytes. */
function entry(n: number, nameLength = 20): CachedClient {
  const clientId = `https://app-${String(n).padStart(3, "0")}.example/client-metadata.json`;
  return {
    client: {
      clientId,
      isLoopback: false,
      applicationType: "web",
      authMethod: "private_key_jwt",
      redirectUris: [`https://app-${String(n).padStart(3, "0")}.example/callback`],
      scopes: ["atproto", "transition:generic"],
      clientName: `Ä${"x".repeat(nameLength - 1)}`,
      jwksUri: `https://app-${String(n).padStart(3, "0")}.example/jwks.json`,
    },
    fetchedKeys: [{ kty: "EC", crv: "P-256", x: "x-coordinate", y: "y-coordinate", kid: "key-1", alg: "ES256", use: "sig" }],
  };
}
const idOf = (n: number) => entry(n).client.clientId;
const sizeOf = (cached: CachedClient) => Buffer.byteLength(JSON.stringify(cached));

/** The client metadata cache (docs/decisions/0011) on each engine: freshness, upsert, and its two bounds. */
describe.each(ENGINES)("SqlClientStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const open = (bounds: Partial<ClientCacheBounds> = {}, db = shared.db) => new SqlClientStore(db, { maxEntries: 100, maxBytes: 1_000_000, ...bounds });
  const cachedIds = async () => (await rowsOf<{ clientId: string }>(shared.db, sql`SELECT "clientId" FROM "Client"`)).map((row) => row.clientId).sort();

  it("finds a saved client while fresh, exactly as saved (non-ASCII included)", async () => {
    const store = open();
    await store.save(idOf(1), entry(1), NOW, NOW + HOUR);
    expect(await store.findFresh(idOf(1), NOW + HOUR - 1)).toEqual(entry(1));
    expect(await store.findFresh(idOf(2), NOW)).toBeUndefined();
  });

  it("an expired entry is absent and its row deleted (lazy expiry)", async () => {
    const store = open();
    await store.save(idOf(1), entry(1), NOW, NOW + HOUR);
    expect(await store.findFresh(idOf(1), NOW + HOUR)).toBeUndefined();
    expect(await countRows(shared.db, "Client")).toBe(0);
  });

  it("saving again replaces the entry and its expiry (one row)", async () => {
    const store = open();
    await store.save(idOf(1), entry(1), NOW, NOW + HOUR);
    const changed = { ...entry(1), fetchedKeys: [] };
    await store.save(idOf(1), changed, NOW + 10, NOW + 2 * HOUR);
    expect(await store.findFresh(idOf(1), NOW + HOUR)).toEqual(changed);
    expect(await countRows(shared.db, "Client")).toBe(1);
  });

  it("saving removes a batch of other clients' expired entries", async () => {
    const store = open();
    for (let n = 0; n < 25; n++) await store.save(idOf(n), entry(n), NOW - 2 * HOUR, NOW - HOUR);
    await store.save(idOf(99), entry(99), NOW, NOW + HOUR);
    expect(await countRows(shared.db, "Client")).toBe(6);
  });

  it("keeps at most maxEntries, evicting the oldest fetched first", async () => {
    const store = open({ maxEntries: 3 });
    for (let n = 1; n <= 5; n++) await store.save(idOf(n), entry(n), NOW + n, NOW + HOUR);
    expect(await cachedIds()).toEqual([idOf(3), idOf(4), idOf(5)]);
    // Fetching an old client again makes it the newest.
    await store.save(idOf(3), entry(3), NOW + 10, NOW + HOUR);
    await store.save(idOf(6), entry(6), NOW + 11, NOW + HOUR);
    expect(await cachedIds()).toEqual([idOf(3), idOf(5), idOf(6)]);
  });

  it("keeps at most maxBytes of metadata, counted from the newest", async () => {
    const size = sizeOf(entry(1));
    const store = open({ maxBytes: Math.floor(2.5 * size) });
    for (let n = 1; n <= 4; n++) await store.save(idOf(n), entry(n), NOW + n, NOW + HOUR);
    expect(await cachedIds()).toEqual([idOf(3), idOf(4)]);
    // One large entry displaces as many small ones as it needs to.
    const large = entry(5, size + 20);
    expect(sizeOf(large)).toBeLessThanOrEqual(Math.floor(2.5 * size));
    await store.save(idOf(5), large, NOW + 5, NOW + HOUR);
    expect(await cachedIds()).toEqual([idOf(5)]);
    const rows = await rowsOf<{ size: number }>(shared.db, sql`SELECT "size" FROM "Client"`);
    expect(rows).toEqual([{ size: sizeOf(large) }]);
  });

  it("does not cache an entry over 64 KiB at all", async () => {
    const store = open();
    await store.save(idOf(1), entry(1, 70_000), NOW, NOW + HOUR);
    expect(await store.findFresh(idOf(1), NOW)).toBeUndefined();
    expect(await countRows(shared.db, "Client")).toBe(0);
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
