import { verifySignature } from "@atproto/crypto";
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ENGINES, raceOn, rowOf, rowsOf } from "../../../tests/helpers/databases.ts";
import { insertAccount, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { ConfigError } from "../config.ts";
import { sql } from "../db/sql.ts";
import { SqlSecretStore } from "../stores/secrets.ts";
import { SqlSigningKeyStore } from "../stores/sql-signing-key-store.ts";
import { accountKeypair, generateSigningKey } from "./signing-key.ts";
import { loadSigningKeys, resealUnderCurrentKey } from "./signing-key-setup.ts";

const hex = () => randomBytes(32).toString("hex");
const ACCOUNTS = ["did:plc:aaaa", "did:plc:bbbb", "did:plc:cccc"];

type Row = { did: string; signingKey: string; signingKeyEncryptedWith: string | null };

/**
 * The accounts' signing keys at start and on rotation (docs/decisions/0050), on both engines: what a copy of the
 * database alone could read is sealed before anything signs, a key that opens nothing here stops the start, and the
 * rotation seals every key under the current one. Each sealed key still signs for its account's did:key.
 */
describe.each(ENGINES)("loadSigningKeys and resealUnderCurrentKey on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const load = (settings: { keyHex?: string; previousKeysHex?: string[] }, db = shared.db, onResealed?: Parameters<typeof loadSigningKeys>[4]) =>
    loadSigningKeys({ keyHex: settings.keyHex, previousKeysHex: settings.previousKeysHex ?? [] }, new SqlSecretStore(db), new SqlSigningKeyStore(db), 0, onResealed);
  const rows = () => rowsOf<Row>(shared.db, sql`SELECT "did", "signingKey", "signingKeyEncryptedWith" FROM "Account" ORDER BY "did"`);
  const storedSecret = () => rowOf<{ value: string }>(shared.db, sql`SELECT "value" FROM "ServerSecret" WHERE "name" = 'key_encryption_key'`);

  /** Accounts whose keys are stored as the versions before sealing stored them: the private JWK in the clear. */
  async function accountsInTheClear(): Promise<Map<string, string>> {
    const didKeys = new Map<string, string>();
    for (const did of ACCOUNTS) {
      const privateJwk = await generateSigningKey();
      didKeys.set(did, (await accountKeypair(privateJwk)).did());
      await insertAccount(shared.db, did, { signingKey: privateJwk });
    }
    return didKeys;
  }

  /** Every account's stored key opens with `keys` and signs for the did:key it had. */
  async function expectSigning(keys: Awaited<ReturnType<typeof load>>, didKeys: Map<string, string>) {
    for (const row of await rows()) {
      expect(row.signingKey).not.toContain('"d"');
      const data = new TextEncoder().encode(`a commit of ${row.did}`);
      const keypair = await keys.keypair(row.did, row.signingKey);
      expect(keypair.did()).toBe(didKeys.get(row.did));
      expect(await verifySignature(keypair.did(), data, await keypair.sign(data))).toBe(true);
    }
  }

  it("keys stored in the clear are sealed at start under ATRIUM_KEY_ENCRYPTION_KEY, and still sign for their accounts", async () => {
    const didKeys = await accountsInTheClear();
    const resealed: unknown[] = [];
    const keys = await load({ keyHex: hex() }, shared.db, (event) => resealed.push(event));
    expect(resealed).toEqual([{ from: "clear", accounts: 3 }]);
    expect((await rows()).map((row) => row.signingKeyEncryptedWith)).toEqual([keys.ring.current.id, keys.ring.current.id, keys.ring.current.id]);
    await expectSigning(keys, didKeys);
    // Nothing is generated or kept in the database when the key comes from the environment.
    expect(await storedSecret()).toBeUndefined();
    // A second start has nothing to do.
    const again: unknown[] = [];
    await load({ keyHex: Buffer.from(keys.ring.current.bytes).toString("hex") }, shared.db, (event) => again.push(event));
    expect(again).toEqual([]);
  });

  it("without the setting (loopback development): a key generated once into the database, shared by every process", async () => {
    const didKeys = await accountsInTheClear();
    const first = await load({});
    const second = await load({}, shared.others(1)[0]);
    expect(second.ring.current.id).toBe(first.ring.current.id);
    expect(await storedSecret()).toBeDefined();
    await expectSigning(second, didKeys);
  });

  it("a key sealed by a key this process does not have stops the start, naming the key, and nothing is generated or changed", async () => {
    await accountsInTheClear();
    const configured = await load({ keyHex: hex() });
    const before = await rows();
    // The setting missing: no new key is generated, since it would open none of them.
    await expect(load({})).rejects.toThrow(ConfigError);
    await expect(load({})).rejects.toThrow(`ATRIUM_KEY_ENCRYPTION_KEY is not set, and 3 accounts' signing keys are (key id ${configured.ring.current.id}) sealed under a key from the environment`);
    expect(await storedSecret()).toBeUndefined();
    // The setting wrong.
    await expect(load({ keyHex: hex() })).rejects.toThrow(/neither ATRIUM_KEY_ENCRYPTION_KEY .* nor one of ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS/);
    expect(await rows()).toEqual(before);
  });

  it("a development database moved to a configured key: what the generated key sealed is sealed again, and the generated key forgotten", async () => {
    const didKeys = await accountsInTheClear();
    const generated = await load({});
    expect(await storedSecret()).toBeDefined();
    const configured = await load({ keyHex: hex() });
    expect((await rows()).every((row) => row.signingKeyEncryptedWith === configured.ring.current.id)).toBe(true);
    expect(await storedSecret()).toBeUndefined();
    await expectSigning(configured, didKeys);
    expect(generated.ring.current.id).not.toBe(configured.ring.current.id);
  });

  it("rotation: with the new key and the old one as a previous key, a start opens both; the command seals all under the new one", async () => {
    const didKeys = await accountsInTheClear();
    const oldHex = hex();
    await load({ keyHex: oldHex });
    const newHex = hex();
    const rotating = await load({ keyHex: newHex, previousKeysHex: [oldHex] });
    // The start does not rotate by itself: the old key's seals stay until the command runs.
    expect((await rows()).every((row) => row.signingKeyEncryptedWith !== rotating.ring.current.id)).toBe(true);
    await expectSigning(rotating, didKeys);
    const outcome = await resealUnderCurrentKey(new SqlSigningKeyStore(shared.db), rotating);
    expect(outcome.remaining).toBe(0);
    expect(outcome.resealed.map((entry) => entry.accounts)).toEqual([3]);
    // The old key can go: the new one alone opens everything.
    const after = await load({ keyHex: newHex });
    await expectSigning(after, didKeys);
    expect(await resealUnderCurrentKey(new SqlSigningKeyStore(shared.db), after)).toEqual({ resealed: [], remaining: 0 });
  });

  it(`RACE: ${ACCOUNTS.length * 10} keys in the clear sealed by 4 starts ${raceOn(engine, 4)}: each row sealed once, every key still its account's`, async () => {
    const didKeys = new Map<string, string>();
    for (let i = 0; i < 30; i++) {
      const did = `did:plc:race${String(i).padStart(4, "0")}`;
      const privateJwk = await generateSigningKey();
      didKeys.set(did, (await accountKeypair(privateJwk)).did());
      await insertAccount(shared.db, did, { signingKey: privateJwk });
    }
    const keyHex = hex();
    const counts: number[] = [];
    const loaded = await Promise.all(shared.others(4).map((db) => load({ keyHex }, db, ({ accounts }) => counts.push(accounts))));
    // Of the starts, the rows each sealed add up to the rows there were: no row sealed twice, none left.
    expect(counts.reduce((sum, count) => sum + count, 0)).toBe(30);
    expect((await rows()).filter((row) => row.signingKeyEncryptedWith !== loaded[0]!.ring.current.id)).toEqual([]);
    await expectSigning(loaded[0]!, didKeys);
  });
});
