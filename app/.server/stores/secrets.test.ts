import { describe, expect, it } from "vitest";
import { ENGINES, rowOf, raceOn } from "../../../tests/helpers/databases.ts";
import { countRows, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { sql } from "../db/sql.ts";
import { loadOrCreateSecret } from "./secrets.ts";

/** The server's own secrets, made once per database however many processes start at once. */
describe.each(ENGINES)("loadOrCreateSecret on %s", (engine) => {
  const shared = useSharedDatabase(engine);

  it("creates a random secret on first use and returns the same one afterwards", async () => {
    const secret = await loadOrCreateSecret(shared.db, "cookie", 1_800_000_000_000);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await loadOrCreateSecret(shared.db, "cookie")).toBe(secret);
    expect(await rowOf(shared.db, sql`SELECT "value", "createdAt" FROM "ServerSecret" WHERE "name" = 'cookie'`)).toEqual({ value: secret, createdAt: 1_800_000_000_000 });
  });

  it("each name has its own secret", async () => {
    const cookie = await loadOrCreateSecret(shared.db, "cookie");
    const nonce = await loadOrCreateSecret(shared.db, "dpop_nonce");
    expect(nonce).not.toBe(cookie);
    expect(await loadOrCreateSecret(shared.db, "dpop_nonce")).toBe(nonce);
  });

  it(`RACE: 20 starts ${raceOn(engine, 4)} on an empty database all get the one stored value`, async () => {
    const handles = shared.others(4);
    const secrets = await Promise.all(Array.from({ length: 20 }, (_, i) => loadOrCreateSecret(handles[i % 4]!, "cookie")));
    expect(new Set(secrets).size).toBe(1);
    expect(await countRows(shared.db, "ServerSecret")).toBe(1);
    expect(await loadOrCreateSecret(shared.db, "cookie")).toBe(secrets[0]);
  });
});
