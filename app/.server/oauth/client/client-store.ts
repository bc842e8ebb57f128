import type { ClientJwk, OAuthClient } from "./client-metadata.ts";

/**
 * What the cache keeps of a client: the validated, normalised client (never
 * the fetched document itself) and the usable keys of its jwks_uri.
 */
export type CachedClient = {
  client: OAuthClient;
  /** Keys fetched from jwks_uri, when the client uses one. */
  fetchedKeys?: ClientJwk[];
};

export interface ClientStore {
  /** A cached entry that has not expired; an expired one is deleted and absent (lazy expiry). */
  findFresh(clientId: string, now: number): Promise<CachedClient | undefined>;
  /**
   * Caches a client that validated. The cache is bounded in entries and in
   * bytes: saving evicts the oldest entries beyond either bound.
   */
  save(clientId: string, entry: CachedClient, fetchedAt: number, expiresAt: number): Promise<void>;
}
