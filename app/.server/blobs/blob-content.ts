/**
 * Where the bytes of blobs live (docs/decisions/0043): a content store keeps copies by key, and knows nothing of
 * accounts, CIDs or quotas, which the SQL blob store (BlobStore) keeps. Two implementations: files under the blob
 * folder (disk-blob-content.ts, the SQLite default) and fixed-size pieces in the shared database
 * (stores/sql-blob-chunks.ts, the PostgreSQL default). Both stream both ways: a writer takes the bytes as they
 * arrive, a reader hands them out one piece at a time, as fast as they are asked for.
 */
export interface BlobContentStore {
  /** "disk" or "database", as the logs and the README name them. */
  readonly kind: "disk" | "database";
  /** Starts a new copy under `key` (a BlobStore.beginWrite key: 32 hexadecimal digits). */
  create(key: string): Promise<ContentWriter>;
  /** The copy `key`, read piece by piece; undefined when there is no such copy. */
  open(key: string): Promise<ContentReader | undefined>;
  /** Deletes the copy `key`, whatever of it was written; nothing when there is none. */
  remove(key: string): Promise<void>;
}

export interface ContentWriter {
  /** Appends bytes; resolves once they are handed on, so that a fast sender waits for the store. */
  write(bytes: Uint8Array): Promise<void>;
  /** Ends the copy: once resolved, its bytes are durable and `open` reads them, after a crash too. */
  finish(): Promise<void>;
  /** Ends the copy unfinished and deletes what was written. */
  abort(): Promise<void>;
}

export interface ContentReader {
  /** The next piece (at most CONTENT_PIECE_BYTES), or undefined at the end. */
  read(): Promise<Uint8Array | undefined>;
  /** Releases what the reader holds (a file, nothing for the database); reading to the end releases it too. */
  close(): Promise<void>;
}

/**
 * The piece a reader hands out and the database store's chunk: what one download holds at a time. 64 KiB is what a
 * Node file stream reads at once; a 5 MiB blob is 80 of them, each one query for the database store.
 */
export const CONTENT_PIECE_BYTES = 64 * 1024;

/** A copy's key, as BlobStore.beginWrite makes them: anything else never reaches a file name. */
export function isContentKey(key: string): boolean {
  return /^[0-9a-f]{32}$/.test(key);
}
