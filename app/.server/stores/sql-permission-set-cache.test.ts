import { describe, expect, it } from "vitest";
import { ENGINES, execute, raceOn } from "../../../tests/helpers/databases.ts";
import { countRows, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { at, sql } from "../db/sql.ts";
import type { CachedPermissionSet } from "../oauth/scopes/permission-sets/permission-set-cache.ts";
import { SqlPermissionSetCache } from "./sql-permission-set-cache.ts";

const NOW = 1_800_000_000_000;
const DAY = 86_400_000;
const NSID = "com.example.calendar.authFull";

function cached(nsid: string, fetchedAt = NOW, overrides: Partial<CachedPermissionSet> = {}): CachedPermissionSet {
  return {
    nsid,
    document: { $type: "com.atproto.lexicon.schema", lexicon: 1, id: nsid, defs: { main: { type: "permission-set", title: "Kalender ✓", permissions: [] } } },
    fetchedAt,
    expiresAt: fetchedAt + 90 * DAY,
    ...overrides,
  };
}

/** The permission-set lexicons the network resolver fetched, on each engine. */
describe.each(ENGINES)("SqlPermissionSetCache on %s", (engine) => {
  const shared = useSharedDatabase(engine);

  it("returns a stored document as it was put, until it expires", async () => {
    const cache = new SqlPermissionSetCache(shared.db);
    await cache.put(cached(NSID));
    expect(await cache.get(NSID, NOW + 90 * DAY - 1)).toEqual(cached(NSID));
    expect(await cache.get("com.example.other.set", NOW)).toBeUndefined();
  });

  it("an expired row is absent and deleted", async () => {
    const cache = new SqlPermissionSetCache(shared.db);
    await cache.put(cached(NSID));
    expect(await cache.get(NSID, NOW + 90 * DAY)).toBeUndefined();
    expect(await countRows(shared.db, "PermissionSetCache")).toBe(0);
  });

  it("put replaces the row (one per NSID)", async () => {
    const cache = new SqlPermissionSetCache(shared.db);
    await cache.put(cached(NSID));
    const refreshed = cached(NSID, NOW + DAY, { document: { id: NSID, revision: 2 } });
    await cache.put(refreshed);
    expect(await cache.get(NSID, NOW + DAY)).toEqual(refreshed);
    expect(await countRows(shared.db, "PermissionSetCache")).toBe(1);
  });

  it("a row whose document is not JSON is dropped, not served", async () => {
    const cache = new SqlPermissionSetCache(shared.db);
    await execute(shared.db, sql`INSERT INTO "PermissionSetCache" ("nsid", "document", "fetchedAt", "expiresAt") VALUES (${NSID}, '{not json', ${at(NOW)}, ${at(NOW + DAY)})`);
    expect(await cache.get(NSID, NOW)).toBeUndefined();
    expect(await countRows(shared.db, "PermissionSetCache")).toBe(0);
  });

  it("delete removes one NSID's row", async () => {
    const cache = new SqlPermissionSetCache(shared.db);
    await cache.put(cached(NSID));
    await cache.put(cached("com.example.other.set"));
    await cache.delete(NSID);
    expect(await cache.get(NSID, NOW)).toBeUndefined();
    expect(await cache.get("com.example.other.set", NOW)).toBeDefined();
  });

  it("put removes a batch of expired rows", async () => {
    const cache = new SqlPermissionSetCache(shared.db);
    for (let i = 0; i < 25; i++) await cache.put(cached(`com.example.old.set${i}`, NOW - 100 * DAY));
    await cache.put(cached(NSID));
    expect(await countRows(shared.db, "PermissionSetCache")).toBe(6);
  });

  it(`RACE: 20 puts of one NSID ${raceOn(engine, 4)} leave one row, of one of them`, async () => {
    const caches = shared.others(4).map((db) => new SqlPermissionSetCache(db));
    await Promise.all(Array.from({ length: 20 }, (_, i) => caches[i % 4]!.put(cached(NSID, NOW + i))));
    expect(await countRows(shared.db, "PermissionSetCache")).toBe(1);
    const found = await new SqlPermissionSetCache(shared.db).get(NSID, NOW + 20);
    expect(found?.fetchedAt).toBeGreaterThanOrEqual(NOW);
  });
});
