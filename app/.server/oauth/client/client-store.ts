import type { JWK } from "jose";

export type CachedClientDocument = {
  /** The raw metadata document as fetched. */
  document: unknown;
  /** Keys fetched from jwks_uri, when the client uses one. */
  fetchedJwks?: JWK[];
};

export interface ClientStore {
  /** A cached entry that has not expired; an expired one is deleted and absent (DESIGN 4.4). */
  findFresh(clientId: string, now: number): Promise<CachedClientDocument | undefined>;
  save(clientId: string, entry: CachedClientDocument, fetchedAt: number, expiresAt: number): Promise<void>;
}
