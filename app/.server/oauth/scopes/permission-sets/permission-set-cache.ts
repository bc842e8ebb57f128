/**
 * Where the network resolver keeps the permission-set lexicons it fetched
 * (table "PermissionSetCache"). Times are epoch milliseconds.
 */

export type CachedPermissionSet = {
  nsid: string;
  /** The lexicon document as fetched (the com.atproto.lexicon.schema record, as JSON). */
  document: unknown;
  fetchedAt: number;
  /** The row is dropped after this, whatever its freshness. */
  expiresAt: number;
};

export interface PermissionSetCache {
  /** The cached document for `nsid`; a row whose expiresAt has passed is deleted and absent. */
  get(nsid: string, now: number): Promise<CachedPermissionSet | undefined>;
  /** Inserts or replaces the row for `entry.nsid` (and drops a few expired rows). */
  put(entry: CachedPermissionSet): Promise<void>;
  delete(nsid: string): Promise<void>;
}
