import { Secp256k1Keypair } from "@atproto/crypto";
import { describe, expect, it } from "vitest";
import { ENGINES, rowOf } from "../../../tests/helpers/databases.ts";
import { useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { ConfigError } from "../config.ts";
import { sql } from "../db/sql.ts";
import { SqlSecretStore } from "../stores/secrets.ts";
import { loadRotationKey } from "./rotation-key.ts";

const storedKey = sql`SELECT "value" FROM "ServerSecret" WHERE "name" = 'plc_rotation_key'`;

/** The server's PLC rotation key: the setting when given, else (loopback development) generated once and kept with the server's secrets. */
describe.each(ENGINES)("loadRotationKey on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const secrets = () => new SqlSecretStore(shared.db);

  it("without the setting: generated on first use, the same key afterwards and in every process", async () => {
    const first = await loadRotationKey(undefined, secrets(), 1_800_000_000_000);
    const others = await Promise.all(shared.others(3).map((db) => loadRotationKey(undefined, new SqlSecretStore(db), 1_800_000_000_000)));
    expect(first.did()).toMatch(/^did:key:zQ3s/); // secp256k1
    expect(others.map((key) => key.did())).toEqual([first.did(), first.did(), first.did()]);
    expect(await rowOf(shared.db, storedKey)).toBeDefined();
  });

  it("with the setting: that key, and nothing stored", async () => {
    const key = await Secp256k1Keypair.create({ exportable: true });
    const hex = Buffer.from(await key.export()).toString("hex");
    expect((await loadRotationKey(hex, secrets(), 0)).did()).toBe(key.did());
    expect(await rowOf(shared.db, storedKey)).toBeUndefined();
  });

  it("a generated key moved into the setting, as docs/data-server.md says: the same key, and the database's copy forgotten", async () => {
    const generated = await loadRotationKey(undefined, secrets(), 0);
    const stored = await rowOf<{ value: string }>(shared.db, storedKey);
    // What docs/data-server.md ("Identity") tells an operator to do to move it into ATRIUM_PLC_ROTATION_KEY.
    const hex = Buffer.from(stored!.value, "base64url").toString("hex");
    expect((await loadRotationKey(hex, secrets(), 0)).did()).toBe(generated.did());
    expect(await rowOf(shared.db, storedKey)).toBeUndefined();
  });

  it("a setting that is not the generated key the DIDs name stops the start, naming both keys, and changes nothing", async () => {
    const generated = await loadRotationKey(undefined, secrets(), 0);
    const other = await Secp256k1Keypair.create({ exportable: true });
    const refusal = loadRotationKey(Buffer.from(await other.export()).toString("hex"), secrets(), 0);
    await expect(refusal).rejects.toThrow(ConfigError);
    await expect(refusal).rejects.toThrow(generated.did());
    await expect(refusal).rejects.toThrow(other.did());
    expect(await rowOf(shared.db, storedKey)).toBeDefined();
  });
});
