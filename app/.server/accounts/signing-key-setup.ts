import { ConfigError, type Config } from "../config.ts";
import type { SecretStore } from "../security/secret-store.ts";
import { encryptionKey, KeyRing, type EncryptionKey } from "./key-encryption.ts";
import { SigningKeys } from "./signing-key.ts";
import type { SigningKeyStore } from "./signing-key-store.ts";

/** Accounts sealed again per read of the store. */
const BATCH = 100;

/** What a start or a rotation sealed again, by where the keys came from (`clear`: stored in the clear). */
export type Resealed = { from: string; accounts: number };

/**
 * The accounts' signing keys for this process (docs/decisions/0050): the key ring from ATRIUM_KEY_ENCRYPTION_KEY and
 * ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS, or on plain http on loopback without them, a key generated into the database.
 * Before anything signs, what a copy of the database alone could read is sealed under the current key: keys stored in
 * the clear by an earlier version, and keys sealed by the database-kept key once a key is configured (which is then
 * forgotten). Several processes may do it at once (each row is one compare-and-swap), and a start that stopped
 * half-way is finished by the next.
 *
 * Refused, without generating or changing anything: a key sealed by a key this process does not know (the setting
 * missing, or wrong), since a new key would leave those accounts unable to sign, without a word.
 */
export async function loadSigningKeys(
  settings: Config["keyEncryption"],
  secrets: SecretStore,
  store: SigningKeyStore,
  now: number,
  onResealed: (resealed: Resealed) => void = () => {},
): Promise<SigningKeys> {
  const inUse = await store.keyIds();
  const stored = await secrets.find("key_encryption_key");
  const kept = stored === undefined ? undefined : encryptionKey(Buffer.from(stored, "base64url"));
  const ring = settings.keyHex
    ? new KeyRing(encryptionKey(Buffer.from(settings.keyHex, "hex")), [...settings.previousKeysHex.map((hex) => encryptionKey(Buffer.from(hex, "hex"))), ...(kept ? [kept] : [])])
    : new KeyRing(kept ?? (await generatedKey(secrets, inUse, now)));
  refuseUnknownKeys(ring, inUse);
  const keys = new SigningKeys(ring);
  const clear = await resealFrom(store, keys, null);
  if (clear > 0) onResealed({ from: "clear", accounts: clear });
  if (kept && kept.id !== ring.current.id) {
    const moved = await resealFrom(store, keys, kept.id);
    if (moved > 0) onResealed({ from: kept.id, accounts: moved });
    // Nothing of it is left to open: a copy of the database must not hold a key (docs/operations.md, "Backups").
    if (!(await store.keyIds()).some(({ keyId }) => keyId === kept.id)) await secrets.remove("key_encryption_key", stored!);
  }
  return keys;
}

/**
 * `npm run account -- rotate-key-encryption`: every key sealed by an earlier key (ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS)
 * sealed again under ATRIUM_KEY_ENCRYPTION_KEY, so that the earlier keys can be dropped. Resumable, and safe beside
 * running servers: each row is one compare-and-swap, and a server opens a key under either.
 */
export async function resealUnderCurrentKey(store: SigningKeyStore, keys: SigningKeys): Promise<{ resealed: Resealed[]; remaining: number }> {
  const resealed: Resealed[] = [];
  for (const { keyId } of await store.keyIds()) {
    if (keyId === keys.ring.current.id) continue;
    const accounts = await resealFrom(store, keys, keyId);
    if (accounts > 0) resealed.push({ from: keyId ?? "clear", accounts });
  }
  const remaining = (await store.keyIds()).filter(({ keyId }) => keyId !== keys.ring.current.id).reduce((sum, { accounts }) => sum + accounts, 0);
  return { resealed, remaining };
}

/** Seals again, under the current key, every account's key sealed by `keyId` (null: in the clear); how many it did. */
async function resealFrom(store: SigningKeyStore, keys: SigningKeys, keyId: string | null): Promise<number> {
  let count = 0;
  for (;;) {
    const batch = await store.sealedWith(keyId, BATCH);
    let replaced = 0;
    for (const { did, signingKey } of batch) {
      const privateJwk = keyId === null ? signingKey : openStored(keys, did, signingKey);
      // Another process may have sealed it meanwhile: then its row no longer holds `signingKey`, and this changes nothing.
      if (await store.reseal(did, signingKey, keys.seal(did, privateJwk), keys.ring.current.id)) replaced += 1;
    }
    count += replaced;
    // Nothing left, or a batch another process is sealing at the same time: it finishes what it took.
    if (replaced === 0) return count;
  }
}

function openStored(keys: SigningKeys, did: string, signingKey: string): string {
  try {
    return keys.open(did, signingKey);
  } catch (error) {
    throw new ConfigError(`The signing key of ${did} cannot be opened: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

/**
 * Development on loopback without ATRIUM_KEY_ENCRYPTION_KEY: a key generated once into the database (every process
 * shares it), but only while no account's key is sealed by a key from the environment, which a new key cannot open.
 */
async function generatedKey(secrets: SecretStore, inUse: Array<{ keyId: string | null; accounts: number }>, now: number): Promise<EncryptionKey> {
  const sealed = inUse.filter(({ keyId }) => keyId !== null);
  if (sealed.length > 0) {
    throw new ConfigError(
      `ATRIUM_KEY_ENCRYPTION_KEY is not set, and ${describeKeys(sealed)} sealed under a key from the environment: set ATRIUM_KEY_ENCRYPTION_KEY to that key. ` +
        "A new key would open none of them.",
    );
  }
  return encryptionKey(Buffer.from(await secrets.loadOrCreate("key_encryption_key", now), "base64url"));
}

function refuseUnknownKeys(ring: KeyRing, inUse: Array<{ keyId: string | null; accounts: number }>): void {
  const unknown = inUse.filter(({ keyId }) => keyId !== null && !ring.knows(keyId));
  if (unknown.length === 0) return;
  throw new ConfigError(
    `${describeKeys(unknown)} sealed under a key that is neither ATRIUM_KEY_ENCRYPTION_KEY (key id ${ring.current.id}) nor one of ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS: ` +
      "set the key they were sealed with, as ATRIUM_KEY_ENCRYPTION_KEY, or as a previous key beside a new one (docs/operations.md, \"Keys\").",
  );
}

function describeKeys(keys: Array<{ keyId: string | null; accounts: number }>): string {
  const total = keys.reduce((sum, { accounts }) => sum + accounts, 0);
  return `${total === 1 ? "1 account's signing key is" : `${total} accounts' signing keys are`} (key id ${keys.map(({ keyId }) => keyId).join(", ")})`;
}
