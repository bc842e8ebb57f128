import { createHash } from "node:crypto";
import { AtriumError } from "../errors/atrium-error.ts";
import { rawCidOfDigest } from "../repo/identifiers.ts";
import type { BlobContentStore, ContentReader, ContentWriter } from "./blob-content.ts";
import type { BlobStore, PutBlobOutcome } from "./blob-store.ts";
import { MediaSniffer } from "./blob-type.ts";

/** An upload refused for what it is: too large or empty (uploadBlob answers 413 BlobTooLarge, 400 InvalidRequest). */
export class BlobError extends AtriumError {
  static tooLarge(maxBytes: number): BlobError {
    return new BlobError("BlobTooLarge", `Blobs may be at most ${maxBytes} bytes`, 413);
  }

  static empty(): BlobError {
    return new BlobError("InvalidRequest", "The blob is empty", 400);
  }

  static lost(): BlobError {
    // Only when the upload outlived WRITE_ABANDONED_AFTER_MS, which the request timeout makes impossible.
    return new BlobError("InternalServerError", "The upload took too long and its bytes were discarded; upload it again", 503);
  }

  private constructor(name: string, message: string, status: number) {
    super(name, message, { status, xrpcName: name });
  }
}

export type Upload = {
  /** The media type the client declared (already checked against its permissions). */
  declaredType: string;
  /** The bytes as they arrive. */
  body: AsyncIterable<Uint8Array>;
  /** Throws when the caller may not upload this detected type; called once every byte is in, before the blob is stored. */
  authorizeDetected: (detectedType: string | undefined) => void;
};

/** A blob being served: its stored metadata and its bytes, read as fast as the client takes them. */
export type BlobDownload = { mimeType: string; size: number; body: ReadableStream<Uint8Array> };

export type BlobsOptions = {
  /** ATRIUM_BLOB_MAX_BYTES. */
  maxBytes: number;
  now: () => number;
  /** A failed cleanup step: logged, and left to a later sweep (docs/decisions/0043). */
  report: (message: string, error: unknown) => void;
};

/** Copies the sweep after each upload deletes at most; more than the one blob an upload may add (expired-rows.ts). */
export const SWEEP_BATCH = 5;
/** The same when an account's deletion removes all of its blobs' bytes. */
const SWEEP_ALL_BATCH = 50;

/**
 * Blobs as the data server handles them (docs/decisions/0043): the metadata, quota and references in SQL (BlobStore,
 * docs/decisions/0008), the bytes in a content store (BlobContentStore). An upload streams into a new copy while its
 * CID is hashed and its type sniffed, with the size limit checked as the bytes arrive, then one atomic step stores the
 * blob within the quota; a download streams the copy piece by piece. Copies that no account needs any more are
 * deleted by a sweep after each upload and after an account's deletion, never by a timer.
 */
export class Blobs {
  constructor(
    private readonly store: BlobStore,
    readonly content: BlobContentStore,
    private readonly options: BlobsOptions,
  ) {}

  /**
   * com.atproto.repo.uploadBlob's work. Whatever refuses the upload (the size limit, an empty body, the detected
   * type's permission, the quota, the client leaving), its copy is deleted before the answer: nothing is left behind.
   */
  async upload(did: string, upload: Upload): Promise<Exclude<PutBlobOutcome, { kind: "abandoned" }>> {
    const { now } = this.options;
    const key = await this.store.beginWrite(now());
    let writer: ContentWriter | undefined;
    let kept = false;
    try {
      writer = await this.content.create(key);
      const { digest, size, detectedType } = await this.streamInto(writer, upload.body);
      upload.authorizeDetected(detectedType);
      await writer.finish();
      writer = undefined;
      const mimeType = detectedType ?? upload.declaredType;
      const blob = { cid: rawCidOfDigest(digest), declaredType: upload.declaredType, detectedType, mimeType, size, contentKey: key };
      const outcome = await this.store.putBlob(did, blob, now());
      if (outcome.kind === "abandoned") throw BlobError.lost();
      kept = outcome.kind === "stored" && outcome.copy === "kept";
      return outcome;
    } finally {
      if (!kept) await this.discard(key, writer);
      await this.sweep(SWEEP_BATCH);
    }
  }

  /** The blob, if a record of the account references it and its bytes are there (getBlob); undefined otherwise. */
  async download(did: string, cid: string): Promise<BlobDownload | undefined> {
    const blob = await this.store.servable(did, cid);
    if (!blob) return undefined;
    // Deleted between the two reads (the blob expired, the account was deleted): not found either.
    const reader = await this.content.open(blob.contentKey);
    if (!reader) return undefined;
    return { mimeType: blob.mimeType, size: blob.size, body: piecesOf(reader, blob.size) };
  }

  /** Whether the blob may be served, without opening its bytes (a HEAD request). */
  async exists(did: string, cid: string): Promise<{ mimeType: string; size: number } | undefined> {
    return this.store.servable(did, cid);
  }

  /**
   * One batch of the lazy sweep: copies of CIDs no account has any more, and abandoned writes, are marked in one
   * atomic step, then their bytes removed, then their rows (a crash between leaves them marked, for the next sweep).
   * A failure is reported, never thrown: the request that ran it succeeded, and the next sweep takes the work up.
   * True when more work was waiting.
   */
  async sweep(batch = SWEEP_BATCH): Promise<boolean> {
    try {
      const { doomed, more } = await this.store.sweep(this.options.now(), batch);
      for (const key of doomed) await this.content.remove(key);
      if (doomed.length > 0) await this.store.forget(doomed);
      return more;
    } catch (error) {
      this.options.report("Sweeping blob copies failed; a later upload's sweep continues", error);
      return false;
    }
  }

  /** Sweeps until nothing is left: after an account's deletion, whose blobs were all released at once. */
  async sweepAll(): Promise<void> {
    while (await this.sweep(SWEEP_ALL_BATCH));
  }

  /** The upload's bytes into `writer`, hashed, sniffed and counted as they pass, refused past the size limit. */
  private async streamInto(writer: ContentWriter, body: AsyncIterable<Uint8Array>) {
    const { maxBytes } = this.options;
    const hash = createHash("sha256");
    const sniffer = new MediaSniffer();
    let size = 0;
    for await (const chunk of body) {
      size += chunk.byteLength;
      if (size > maxBytes) throw BlobError.tooLarge(maxBytes);
      hash.update(chunk);
      sniffer.push(chunk);
      await writer.write(chunk);
    }
    if (size === 0) throw BlobError.empty();
    return { digest: hash.digest(), size, detectedType: sniffer.result() };
  }

  /** Removes a copy that is not kept: its bytes, then its row. A failure leaves the row for the sweep of abandoned writes. */
  private async discard(key: string, writer: ContentWriter | undefined): Promise<void> {
    try {
      if (writer) await writer.abort();
      await this.content.remove(key);
      await this.store.endWrite(key);
    } catch (error) {
      this.options.report("Discarding an upload's bytes failed; the sweep of abandoned writes removes them later", error);
    }
  }
}

/**
 * A copy as a stream that reads the next piece only when the one before has been taken (highWaterMark 0): a client
 * that reads slowly, or not at all, holds the server to one piece. It must deliver exactly `size` bytes; a copy deleted
 * while it is read (the database store's chunks) ends it with an error, which cuts the connection.
 */
function piecesOf(reader: ContentReader, size: number): ReadableStream<Uint8Array> {
  let delivered = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const piece = await reader.read();
        if (piece === undefined) {
          if (delivered === size) controller.close();
          else controller.error(new Error(`The blob's copy ended after ${delivered} of its ${size} bytes`));
          return;
        }
        delivered += piece.byteLength;
        if (delivered > size) {
          await reader.close();
          controller.error(new Error(`The blob's copy is longer than its ${size} bytes`));
          return;
        }
        controller.enqueue(piece);
      },
      async cancel() {
        await reader.close();
      },
    },
    { highWaterMark: 0 },
  );
}
