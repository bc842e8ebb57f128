/**
 * Single-use identifiers (DPoP jti, client-assertion jti, spent passkey
 * challenges), shared by every server process using the database.
 */
export interface ReplayStore {
  /** Records `key` until `expiresAt`; false when it was already recorded and still live. */
  recordUnique(namespace: string, key: string, expiresAt: number): Promise<boolean>;
}
