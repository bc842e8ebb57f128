import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto";
import { AtriumError } from "../errors/atrium-error.ts";

/**
 * The accounts' private signing keys are stored sealed with AES-256-GCM under a key from the environment,
 * ATRIUM_KEY_ENCRYPTION_KEY (docs/decisions/0050), so that a copy of the database alone signs nothing.
 *
 * A sealed value is `aes256gcm:<key id>:<nonce>:<ciphertext and tag>` (base64url): the key id names the key that
 * sealed it, so that a key can be rotated (the earlier keys open what they sealed until it is sealed again:
 * `npm run account -- rotate-key-encryption`); the 96-bit nonce is random, as NIST SP 800-38D §8.2.2 allows for far
 * fewer than 2^32 seals under one key; the 128-bit tag makes any change of the value, and the same value under another
 * context (another account's DID), fail to open.
 */

const SCHEME = "aes256gcm";
const KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** A key that seals signing keys, and the id that names it in what it sealed. */
export type EncryptionKey = { readonly id: string; readonly bytes: Buffer };

/**
 * The key's id: a MAC of a fixed text under the key, cut to 96 bits. It names the key in the database without
 * saying anything about it, and two different keys get different ids.
 */
export function encryptionKey(bytes: Buffer): EncryptionKey {
  if (bytes.byteLength !== KEY_BYTES) throw new Error(`A key-encryption key is ${KEY_BYTES} bytes; got ${bytes.byteLength}`);
  const id = createHmac("sha256", bytes).update("atrium key-encryption key id v1").digest().subarray(0, 12).toString("base64url");
  return { id, bytes };
}

/** The id of the key a stored value was sealed with; null when it is not sealed (stored before keys were encrypted). */
export function sealedKeyId(stored: string): string | null {
  if (!stored.startsWith(`${SCHEME}:`)) return null;
  return stored.split(":")[1] ?? null;
}

/** A sealed value that cannot be opened: its key is not known here, or it was changed or moved to another account. */
export class KeyEncryptionError extends AtriumError {
  constructor(code: "key_unknown" | "key_unreadable", message: string) {
    super(code, message, { status: 500 });
  }
}

/**
 * The keys this process knows: `current` seals; every key opens what it sealed. The database-kept key of a
 * development server (docs/decisions/0050) is among the others once a key is configured, until what it sealed is
 * sealed again.
 */
export class KeyRing {
  private readonly byId: Map<string, EncryptionKey>;

  constructor(
    readonly current: EncryptionKey,
    others: readonly EncryptionKey[] = [],
  ) {
    this.byId = new Map([...others, current].map((key) => [key.id, key]));
  }

  /** Whether this ring opens what the key with this id sealed. */
  knows(id: string): boolean {
    return this.byId.has(id);
  }

  /** `plaintext` sealed under the current key, bound to `context` (the account's DID): it opens only with the same. */
  seal(plaintext: string, context: string): string {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.current.bytes, nonce, { authTagLength: TAG_BYTES });
    cipher.setAAD(Buffer.from(context));
    const sealed = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return `${SCHEME}:${this.current.id}:${nonce.toString("base64url")}:${sealed.toString("base64url")}`;
  }

  /** The plaintext of a sealed value, for `context`; refused when its key is unknown or it does not authenticate. */
  open(stored: string, context: string): string {
    const [scheme, id, nonceText, sealedText, ...rest] = stored.split(":");
    if (scheme !== SCHEME || !id || !nonceText || !sealedText || rest.length > 0) {
      throw new KeyEncryptionError("key_unreadable", "The stored signing key is not sealed: start the server once to encrypt the accounts' keys (docs/decisions/0050)");
    }
    const key = this.byId.get(id);
    if (!key) throw new KeyEncryptionError("key_unknown", `The stored signing key was sealed under key ${id}, which is neither ATRIUM_KEY_ENCRYPTION_KEY nor one of ATRIUM_KEY_ENCRYPTION_PREVIOUS_KEYS`);
    const nonce = Buffer.from(nonceText, "base64url");
    const sealed = Buffer.from(sealedText, "base64url");
    if (nonce.byteLength !== NONCE_BYTES || sealed.byteLength < TAG_BYTES) throw new KeyEncryptionError("key_unreadable", "The stored signing key is malformed");
    const decipher = createDecipheriv("aes-256-gcm", key.bytes, nonce, { authTagLength: TAG_BYTES });
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(sealed.subarray(sealed.byteLength - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(sealed.subarray(0, sealed.byteLength - TAG_BYTES)), decipher.final()]).toString("utf8");
    } catch {
      throw new KeyEncryptionError("key_unreadable", `The stored signing key does not open under key ${id}: it was changed, or copied from another account`);
    }
  }
}
