import { describe, expect, it } from "vitest";
import { ENGINES, execute, rowOf, raceOn } from "../../../tests/helpers/databases.ts";
import { countRows, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { at, sql } from "../db/sql.ts";
import type { AttemptRule } from "../security/attempt-store.ts";
import { SqlAttemptStore } from "./sql-attempt-store.ts";

const NOW = 1_800_000_000_000;
const MEMORY = 15 * 60_000;

/** `free` attempts at once, then a wait of 1 s after each further one (per key, or per key as `freeOf` says). */
function rule(free: number, freeOf: (key: string) => number = () => free): AttemptRule {
  return { memoryMs: MEMORY, delayAfter: (key, count) => (count >= freeOf(key) ? 1_000 * 2 ** (count - freeOf(key)) : 0) };
}

/** The attempt counters (docs/decisions/0009) on each engine: a claim is decided and counted in one atomic step. */
describe.each(ENGINES)("SqlAttemptStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const counter = async (key: string) =>
    rowOf<{ count: number; windowEndsAt: number; lastAttemptAt: number | null }>(shared.db, sql`SELECT "count", "windowEndsAt", "lastAttemptAt" FROM "RateLimit" WHERE "key" = ${key}`);

  it("counts a first attempt with a fresh memory", async () => {
    const store = new SqlAttemptStore(shared.db);
    expect(await store.claim(["a"], NOW, rule(3))).toBe(0);
    expect(await counter("a")).toEqual({ count: 1, windowEndsAt: NOW + MEMORY, lastAttemptAt: NOW });
  });

  it("lets the free attempts through, then answers the wait and counts nothing", async () => {
    const store = new SqlAttemptStore(shared.db);
    for (let i = 0; i < 3; i++) expect(await store.claim(["a"], NOW + i, rule(3))).toBe(0);
    // The third attempt was at NOW + 2: the next may start 1 s after it.
    expect(await store.claim(["a"], NOW + 500, rule(3))).toBe(1_000 + 2 - 500);
    expect(await counter("a")).toMatchObject({ count: 3, lastAttemptAt: NOW + 2 });
    expect(await store.claim(["a"], NOW + 1_002, rule(3))).toBe(0);
    expect(await counter("a")).toMatchObject({ count: 4, windowEndsAt: NOW + MEMORY, lastAttemptAt: NOW + 1_002 });
  });

  it("with several keys: the longest wait wins, and a refused claim counts on none of them", async () => {
    const store = new SqlAttemptStore(shared.db);
    const twoFree = rule(0, (key) => (key === "account" ? 2 : 10));
    await store.claim(["account", "address"], NOW, twoFree);
    await store.claim(["account", "address"], NOW, twoFree);
    expect(await store.claim(["address", "account"], NOW + 100, twoFree)).toBe(900);
    expect(await counter("account")).toMatchObject({ count: 2 });
    expect(await counter("address")).toMatchObject({ count: 2 });
    // The same key twice counts once.
    expect(await store.claim(["other", "other"], NOW, twoFree)).toBe(0);
    expect(await counter("other")).toMatchObject({ count: 1 });
  });

  it("forgets a counter once its memory has passed: the next attempt starts again at 1", async () => {
    const store = new SqlAttemptStore(shared.db);
    for (let i = 0; i < 3; i++) await store.claim(["a"], NOW, rule(3));
    expect(await store.claim(["a"], NOW + MEMORY, rule(3))).toBe(0);
    expect(await counter("a")).toEqual({ count: 1, windowEndsAt: NOW + 2 * MEMORY, lastAttemptAt: NOW + MEMORY });
  });

  it("forgive takes one attempt back, never below zero", async () => {
    const store = new SqlAttemptStore(shared.db);
    await store.claim(["a"], NOW, rule(3));
    await store.forgive("a");
    await store.forgive("a");
    expect(await counter("a")).toMatchObject({ count: 0 });
    await store.forgive("unknown");
    expect(await counter("unknown")).toBeUndefined();
  });

  it("failed pushes the memory out from the failure, never earlier", async () => {
    const store = new SqlAttemptStore(shared.db);
    await store.claim(["a"], NOW, rule(3));
    await store.failed("a", NOW + 60_000, MEMORY);
    expect(await counter("a")).toMatchObject({ windowEndsAt: NOW + 60_000 + MEMORY });
    await store.failed("a", NOW, MEMORY);
    expect(await counter("a")).toMatchObject({ windowEndsAt: NOW + 60_000 + MEMORY });
  });

  it("a counter written before lastAttemptAt existed waits from the start of its memory", async () => {
    const store = new SqlAttemptStore(shared.db);
    await execute(shared.db, sql`INSERT INTO "RateLimit" ("key", "count", "windowEndsAt") VALUES ('legacy', 3, ${at(NOW + MEMORY - 200)})`);
    // Its latest attempt is taken to be at NOW - 200: a second's wait ends at NOW + 800.
    expect(await store.claim(["legacy"], NOW, rule(3))).toBe(800);
  });

  it("a claim removes a batch of expired counters", async () => {
    const store = new SqlAttemptStore(shared.db);
    for (let i = 0; i < 25; i++) await execute(shared.db, sql`INSERT INTO "RateLimit" ("key", "count", "windowEndsAt") VALUES (${`old-${i}`}, 1, ${at(NOW - 1)})`);
    await store.claim(["a"], NOW, rule(3));
    expect(await countRows(shared.db, "RateLimit")).toBe(6);
  });

  it(`RACE: 30 claims on one key ${raceOn(engine, 3)} with 5 free attempts let exactly 5 through`, async () => {
    const stores = shared.others(3).map((db) => new SqlAttemptStore(db));
    const waits = await Promise.all(Array.from({ length: 30 }, (_, i) => stores[i % 3]!.claim(["contested"], NOW, rule(5))));
    expect(waits.filter((wait) => wait === 0)).toHaveLength(5);
    expect(waits.filter((wait) => wait === 1_000)).toHaveLength(25);
    expect(await counter("contested")).toMatchObject({ count: 5 });
  });

  it(`RACE: claims on two keys named in either order ${raceOn(engine, 3)}: no deadlock, and each key counts exactly its free attempts`, async () => {
    const stores = shared.others(3).map((db) => new SqlAttemptStore(db));
    const free = rule(0, (key) => (key === "account" ? 4 : 6));
    const waits = await Promise.all(Array.from({ length: 30 }, (_, i) => stores[i % 3]!.claim(i % 2 ? ["account", "address"] : ["address", "account"], NOW, free)));
    expect(waits.filter((wait) => wait === 0)).toHaveLength(4);
    expect(await counter("account")).toMatchObject({ count: 4 });
    expect(await counter("address")).toMatchObject({ count: 4 });
  });
});
