import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, rowOf, raceOn } from "../../../tests/helpers/databases.ts";
import { raceAgainstHeldWrite } from "../../../tests/helpers/postgres.ts";
import { countRows, insertAccount, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import type { StoredPasskey } from "../accounts/passkey-store.ts";
import type { PostgresDatabase } from "../db/postgres-database.ts";
import { sql } from "../db/sql.ts";
import { SqlPasskeyStore } from "./sql-passkey-store.ts";

const NOW = 1_800_000_000_000;
const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";

/** A COSE public key's worth of bytes, every byte value from 0 to 255 included. */
const PUBLIC_KEY = new Uint8Array(Array.from({ length: 300 }, (_, i) => (i * 7) % 256));

function passkey(credentialId: string, overrides: Partial<StoredPasskey> = {}): StoredPasskey {
  return {
    credentialId,
    accountDid: ALICE,
    name: "Téléphone",
    publicKey: PUBLIC_KEY,
    counter: 0,
    transports: JSON.stringify(["internal", "hybrid"]),
    deviceType: "multiDevice",
    backedUp: true,
    createdAt: NOW,
    lastUsedAt: null,
    ...overrides,
  };
}

/** Passkeys on each engine: one registration per credential ID, and booleans and bytes that read back alike. */
describe.each(ENGINES)("SqlPasskeyStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  let store: SqlPasskeyStore;

  beforeEach(async () => {
    store = new SqlPasskeyStore(shared.db);
    await insertAccount(shared.db, ALICE);
    await insertAccount(shared.db, BOB);
  });

  it("stores a passkey and reads it back identically: a real boolean, a plain Uint8Array of the same bytes", async () => {
    expect(await store.insert(passkey("cred-a"))).toBe(true);
    expect(await store.insert(passkey("cred-b", { backedUp: false, transports: null, deviceType: "singleDevice", counter: 7, lastUsedAt: NOW + 1 }))).toBe(true);
    const a = await store.find("cred-a");
    const b = await store.find("cred-b");
    expect(a).toEqual(passkey("cred-a"));
    expect(b).toEqual(passkey("cred-b", { backedUp: false, transports: null, deviceType: "singleDevice", counter: 7, lastUsedAt: NOW + 1 }));
    expect(typeof a!.backedUp).toBe("boolean");
    expect(b!.backedUp).toBe(false);
    expect(Object.getPrototypeOf(a!.publicKey)).toBe(Uint8Array.prototype);
    expect(Buffer.from(a!.publicKey).equals(Buffer.from(PUBLIC_KEY))).toBe(true);
    expect(await store.find("unknown")).toBeUndefined();
  });

  it("a credential ID already registered, to any account, is refused and the first registration kept", async () => {
    await store.insert(passkey("cred-a"));
    expect(await store.insert(passkey("cred-a", { name: "Another" }))).toBe(false);
    expect(await store.insert(passkey("cred-a", { accountDid: BOB }))).toBe(false);
    expect(await store.find("cred-a")).toMatchObject({ accountDid: ALICE, name: "Téléphone" });
  });

  it("lists an account's passkeys, oldest first", async () => {
    await store.insert(passkey("newer", { createdAt: NOW + 1 }));
    await store.insert(passkey("older", { createdAt: NOW - 1 }));
    await store.insert(passkey("bobs", { accountDid: BOB }));
    const listed = await store.list(ALICE);
    expect(listed.map((key) => key.credentialId)).toEqual(["older", "newer"]);
    expect(listed.every((key) => typeof key.backedUp === "boolean" && Object.getPrototypeOf(key.publicKey) === Uint8Array.prototype)).toBe(true);
  });

  it("records a use: the new counter, the backup state and the time", async () => {
    await store.insert(passkey("cred-a"));
    expect(await store.recordUse("cred-a", 42, false, NOW + 5)).toBe(true);
    expect(await store.find("cred-a")).toMatchObject({ counter: 42, backedUp: false, lastUsedAt: NOW + 5 });
    expect(await store.recordUse("cred-a", 43, true, NOW + 6)).toBe(true);
    expect(await store.find("cred-a")).toMatchObject({ counter: 43, backedUp: true, lastUsedAt: NOW + 6 });
    // Stored as each engine stores a boolean: 1/0 on SQLite, true/false on PostgreSQL, and read back the same.
    const row = await rowOf<{ backedUp: unknown }>(shared.db, sql`SELECT "backedUp" FROM "Passkey" WHERE "credentialId" = 'cred-a'`);
    expect(row!.backedUp).toBe(engine === "sqlite" ? 1 : true);
  });

  it("refuses a use whose counter did not advance past the stored one, writing nothing; an authenticator without a counter (0 and 0) is recorded", async () => {
    await store.insert(passkey("counting", { counter: 10 }));
    for (const stale of [10, 9, 0]) expect(await store.recordUse("counting", stale, false, NOW + 5)).toBe(false);
    expect(await store.find("counting")).toMatchObject({ counter: 10, backedUp: true, lastUsedAt: null });
    await store.insert(passkey("uncounted"));
    expect(await store.recordUse("uncounted", 0, true, NOW + 5)).toBe(true);
    expect(await store.recordUse("uncounted", 0, true, NOW + 6)).toBe(true);
    expect(await store.find("uncounted")).toMatchObject({ counter: 0, lastUsedAt: NOW + 6 });
    expect(await store.recordUse("removed", 1, true, NOW + 5)).toBe(false);
  });

  it("keeps counters of all 32 bits (authenticators count in an unsigned 32-bit number)", async () => {
    await store.insert(passkey("high", { counter: 2 ** 32 - 2 }));
    expect(await store.recordUse("high", 2 ** 32 - 1, true, NOW + 5)).toBe(true);
    expect(await store.find("high")).toMatchObject({ counter: 2 ** 32 - 1 });
    expect(await store.recordUse("high", 2 ** 31, true, NOW + 6)).toBe(false);
  });

  it(`RACE: 12 sign-ins with one counter ${raceOn(engine, 4)}, as a cloned authenticator and its original would make them: one is recorded`, async () => {
    await store.insert(passkey("cloned", { counter: 10 }));
    const stores = shared.others(4).map((db) => new SqlPasskeyStore(db));
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => stores[i % 4]!.recordUse("cloned", 11, i % 2 === 0, NOW + i)));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await store.find("cloned")).toMatchObject({ counter: 11, lastUsedAt: NOW + results.indexOf(true) });
  });

  it("renames and removes only the account's own passkey", async () => {
    await store.insert(passkey("cred-a"));
    expect(await store.rename(BOB, "cred-a", "Stolen")).toBe(false);
    expect(await store.rename(ALICE, "cred-a", "Laptop")).toBe(true);
    expect(await store.find("cred-a")).toMatchObject({ name: "Laptop" });
    expect(await store.remove(BOB, "cred-a")).toBe(false);
    expect(await store.remove(ALICE, "cred-a")).toBe(true);
    expect(await store.remove(ALICE, "cred-a")).toBe(false);
    expect(await countRows(shared.db, "Passkey")).toBe(0);
  });

  it("says whether an account, or any account, has a passkey", async () => {
    expect(await store.exists()).toBe(false);
    expect(await store.exists(ALICE)).toBe(false);
    await store.insert(passkey("cred-a"));
    expect(await store.exists()).toBe(true);
    expect(await store.exists(ALICE)).toBe(true);
    expect(await store.exists(BOB)).toBe(false);
  });

  it(`RACE: 20 registrations of one credential ID ${raceOn(engine, 4)}: exactly one is stored`, async () => {
    const stores = shared.others(4).map((db) => new SqlPasskeyStore(db));
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => stores[i % 4]!.insert(passkey("contested", { accountDid: i % 2 ? ALICE : BOB, name: `try ${i}` }))));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await store.find("contested")).toMatchObject({ name: `try ${results.indexOf(true)}` });
  });
});

/**
 * The counter's re-test where it matters, on PostgreSQL under READ COMMITTED: a sign-in's update that waits for another
 * sign-in's update of the same row must test the counter against the row that one left, not against the count both
 * read before. The order is forced: the other sign-in's update is held open, this one starts and waits for its row.
 */
describe("SqlPasskeyStore on postgresql: two sign-ins with one passkey's counters at once", () => {
  const shared = useSharedDatabase("postgresql");

  beforeEach(async () => {
    await insertAccount(shared.db, ALICE);
    await new SqlPasskeyStore(shared.db).insert(passkey("cloned", { counter: 10 }));
  });

  it.each([
    ["the same counter", 11, 11],
    ["a lower counter than the one recorded meanwhile", 12, 11],
  ])("%s: refused after the wait, and the recorded counter kept", async (_, recorded, late) => {
    // The other process's pool has not connected yet: the step's sign-in opens its first connection during the race.
    const store = new SqlPasskeyStore(shared.others(1)[0]!);
    const accepted = await raceAgainstHeldWrite(
      shared.db as PostgresDatabase,
      (client) => client.query(`UPDATE "Passkey" SET "counter" = $1 WHERE "credentialId" = 'cloned' AND "counter" < $1`, [recorded]),
      () => store.recordUse("cloned", late, false, NOW + 1),
    );
    expect(accepted).toBe(false);
    expect(await store.find("cloned")).toMatchObject({ counter: recorded, lastUsedAt: null });
  });
});
