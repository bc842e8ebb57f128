import { describe, expect, it } from "vitest";
import { ENGINES, rowOf, raceOn } from "../../../tests/helpers/databases.ts";
import { countRows, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { sql } from "../db/sql.ts";
import { SqlSecretStore } from "./secrets.ts";

/** The server's own secrets, made once per database however many processes start at once. */
describe.each(ENGINES)("SqlSecretStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const store = () => new SqlSecretStore(shared.db);

  it("creates a random secret on first use and returns the same one afterwards", async () => {
    expect(await store().find("cookie")).toBeUndefined();
    const secret = await store().loadOrCreate("cookie", 1_800_000_000_000);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await store().loadOrCreate("cookie", 0)).toBe(secret);
    expect(await store().find("cookie")).toBe(secret);
    expect(await rowOf(shared.db, sql`SELECT "value", "createdAt" FROM "ServerSecret" WHERE "name" = 'cookie'`)).toEqual({ value: secret, createdAt: 1_800_000_000_000 });
  });

  it("each name has its own secret", async () => {
    const cookie = await store().loadOrCreate("cookie", 0);
    const nonce = await store().loadOrCreate("dpop_nonce", 0);
    expect(nonce).not.toBe(cookie);
    expect(await store().loadOrCreate("dpop_nonce", 0)).toBe(nonce);
  });

  it("removes a secret only while it is still the value named", async () => {
    const key = await store().loadOrCreate("key_encryption_key", 0);
    expect(await store().remove("key_encryption_key", "another value")).toBe(false);
    expect(await store().find("key_encryption_key")).toBe(key);
    expect(await store().remove("key_encryption_key", key)).toBe(true);
    expect(await store().find("key_encryption_key")).toBeUndefined();
  });

  it(`RACE: 20 starts ${raceOn(engine, 4)} on an empty database all get the one stored value`, async () => {
    const handles = shared.others(4);
    const secrets = await Promise.all(Array.from({ length: 20 }, (_, i) => new SqlSecretStore(handles[i % 4]!).loadOrCreate("cookie", 0)));
    expect(new Set(secrets).size).toBe(1);
    expect(await countRows(shared.db, "ServerSecret")).toBe(1);
    expect(await store().loadOrCreate("cookie", 0)).toBe(secrets[0]);
  });
});
