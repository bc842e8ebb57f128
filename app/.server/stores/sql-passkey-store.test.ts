import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, rowOf, raceOn } from "../../../tests/helpers/databases.ts";
import { countRows, insertAccount, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import type { StoredPasskey } from "../accounts/passkey-store.ts";
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
    await store.recordUse("cred-a", 42, false, NOW + 5);
    expect(await store.find("cred-a")).toMatchObject({ counter: 42, backedUp: false, lastUsedAt: NOW + 5 });
    await store.recordUse("cred-a", 43, true, NOW + 6);
    expect(await store.find("cred-a")).toMatchObject({ counter: 43, backedUp: true, lastUsedAt: NOW + 6 });
    // Stored as each engine stores a boolean: 1/0 on SQLite, true/false on PostgreSQL, and read back the same.
    const row = await rowOf<{ backedUp: unknown }>(shared.db, sql`SELECT "backedUp" FROM "Passkey" WHERE "credentialId" = 'cred-a'`);
    expect(row!.backedUp).toBe(engine === "sqlite" ? 1 : true);
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
