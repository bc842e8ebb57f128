import { Secp256k1Keypair } from "@atproto/crypto";
import { describe, expect, it } from "vitest";
import { ENGINES, rowOf } from "../../../tests/helpers/databases.ts";
import { useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { sql } from "../db/sql.ts";
import { loadRotationKey } from "./rotation-key.ts";

/** The server's PLC rotation key: the setting when given, else generated once and kept with the server's secrets. */
describe.each(ENGINES)("loadRotationKey on %s", (engine) => {
  const shared = useSharedDatabase(engine);

  it("without the setting: generated on first use, the same key afterwards and in every process", async () => {
    const first = await loadRotationKey(undefined, shared.db, 1_800_000_000_000);
    const others = await Promise.all(shared.others(3).map((db) => loadRotationKey(undefined, db, 1_800_000_000_000)));
    expect(first.did()).toMatch(/^did:key:zQ3s/); // secp256k1
    expect(others.map((key) => key.did())).toEqual([first.did(), first.did(), first.did()]);
    const stored = await rowOf<{ value: string }>(shared.db, sql`SELECT "value" FROM "ServerSecret" WHERE "name" = 'plc_rotation_key'`);
    // What docs/data-server.md ("Identity") tells an operator to do to move it into ATRIUM_PLC_ROTATION_KEY.
    const hex = Buffer.from(stored!.value, "base64url").toString("hex");
    expect((await loadRotationKey(hex, shared.db, 0)).did()).toBe(first.did());
  });

  it("with the setting: that key, and nothing stored", async () => {
    const key = await Secp256k1Keypair.create({ exportable: true });
    const hex = Buffer.from(await key.export()).toString("hex");
    expect((await loadRotationKey(hex, shared.db, 0)).did()).toBe(key.did());
    expect(await rowOf(shared.db, sql`SELECT "value" FROM "ServerSecret" WHERE "name" = 'plc_rotation_key'`)).toBeUndefined();
  });
});
