/**
 * The server's own secrets when the environment does not give them (docs/configuration.md, "Settings"):
 * `dpop_nonce` and `cookie`; on plain http on loopback only, `plc_rotation_key` (the PLC rotation key's 32 bytes,
 * identity/rotation-key.ts) and `key_encryption_key` (the key that seals the accounts' signing keys,
 * accounts/signing-key-setup.ts, docs/decisions/0050). Values are 32 random bytes, base64url.
 */
export type SecretName = "dpop_nonce" | "cookie" | "plc_rotation_key" | "key_encryption_key";

/** The `ServerSecret` rows. One implementation, stores/secrets.ts. */
export interface SecretStore {
  /**
   * The named secret, generated and stored on first use. When several processes start at once, all get the one
   * value that was stored first.
   */
  loadOrCreate(name: SecretName, now: number): Promise<string>;
  /** The named secret, if one was stored; nothing is generated. */
  find(name: SecretName): Promise<string | undefined>;
  /** Forgets the named secret when it is still `value` (its copy moved to the environment); whether it did. */
  remove(name: SecretName, value: string): Promise<boolean>;
}
