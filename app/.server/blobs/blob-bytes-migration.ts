import type { Logger } from "../observability/logger.ts";
import { rawCid } from "../repo/identifiers.ts";
import type { BlobContentStore } from "./blob-content.ts";
import type { BlobStore, LegacyBlob } from "./blob-store.ts";

/** Blob keys read per round; each blob is moved on its own. */
const BATCH = 50;

/**
 * Moves the bytes of blobs stored before the content store (docs/decisions/0043, README "Upgrading") out of their
 * rows into the configured content store. Run at start, after the SQL migrations (which cannot write files). Each
 * blob is written as a copy of its own and then adopted in one atomic step that also empties its row, so an
 * interrupted run leaves every blob either moved or untouched, and running it again finishes the rest; several
 * processes starting at once may each write a copy of the same blob, and the adoption keeps one (the others are
 * deleted as every discarded upload's are). One blob's bytes are in memory at a time.
 */
export async function moveLegacyBlobBytes(store: BlobStore, content: BlobContentStore, now: () => number, log: Logger): Promise<number> {
  let moved = 0;
  let after: LegacyBlob | undefined;
  for (;;) {
    const batch = await store.legacyBlobs(after, BATCH);
    if (batch.length === 0) break;
    for (const blob of batch) if (await moveOne(store, content, blob, now, log)) moved++;
    after = batch.at(-1);
  }
  if (moved > 0) log.info({ blobs: moved, store: content.kind }, "Moved the bytes of existing blobs out of the database rows into the blob store");
  return moved;
}

async function moveOne(store: BlobStore, content: BlobContentStore, blob: LegacyBlob, now: () => number, log: Logger): Promise<boolean> {
  const bytes = await store.legacyBytes(blob);
  if (!bytes) return false;
  if (rawCid(bytes) !== blob.cid) log.warn({ did: blob.did, cid: blob.cid }, "A stored blob's bytes do not hash to its CID; moved as they are");
  const key = await store.beginWrite(now());
  let kept = false;
  try {
    const writer = await content.create(key);
    try {
      await writer.write(bytes);
      await writer.finish();
    } catch (error) {
      await writer.abort();
      throw error;
    }
    const outcome = await store.adoptLegacy(blob, key);
    kept = outcome === "kept";
    return kept || outcome === "spare";
  } finally {
    if (!kept) {
      await content.remove(key);
      await store.endWrite(key);
    }
  }
}
