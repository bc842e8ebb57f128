/** An account's signing key as its row stores it (sealed, or in the clear before keys were sealed). */
export type StoredSigningKey = { did: string; signingKey: string };

/**
 * The accounts' stored signing keys, for sealing them under the current key (docs/decisions/0050): at start, those a
 * copy of the database could read; on `npm run account -- rotate-key-encryption`, those under an earlier key. One
 * implementation, stores/sql-signing-key-store.ts.
 */
export interface SigningKeyStore {
  /** How many accounts' keys each key sealed; `keyId` null counts the keys stored in the clear. */
  keyIds(): Promise<Array<{ keyId: string | null; accounts: number }>>;
  /** Up to `limit` accounts whose key `keyId` sealed (null: stored in the clear), in DID order. */
  sealedWith(keyId: string | null, limit: number): Promise<StoredSigningKey[]>;
  /**
   * Stores `sealed` (sealed by `keyId`) in place of the account's key while the row still holds `previous`: another
   * process that sealed it first wins, and this one changes nothing. Whether it replaced it.
   */
  reseal(did: string, previous: string, sealed: string, keyId: string): Promise<boolean>;
}
