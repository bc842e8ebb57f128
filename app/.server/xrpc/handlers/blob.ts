import type { PutBlobOutcome } from "../../repo/blob-store.ts";
import { detectMediaType, mediaTypeEssence } from "../../repo/blob-type.ts";
import { rawCid } from "../../repo/identifiers.ts";
import { SECOND } from "../../util/time.ts";
import type { XrpcMethods } from "../xrpc-method.ts";
import { invalidRequest, XrpcError } from "../xrpc-error.ts";

/**
 * 413, as for a blob over ATRIUM_BLOB_MAX_BYTES: RFC 9110 §15.5.14, "the request content is larger than the server
 * is willing or able to process" — here, larger than what the account's quota has left (docs/decisions/0008).
 */
function quotaExceeded(refusal: Extract<PutBlobOutcome, { kind: "over-quota" }>, size: number, graceMs: number): XrpcError {
  const free = Math.max(0, refusal.quotaBytes - refusal.usedBytes);
  return new XrpcError(
    413,
    "BlobQuotaExceeded",
    `This blob (${size} bytes) does not fit in the account's blob quota: ${refusal.usedBytes} of ${refusal.quotaBytes} bytes are in use, ${free} free. ` +
      `Blobs that no record references are deleted ${graceMs / SECOND} seconds after upload.`,
  );
}

export const blobMethods: XrpcMethods = {
  /**
   * Raw body with its Content-Type. `blob:` is checked against the declared
   * type and, when the bytes say otherwise, against the detected type too: a
   * PNG declared as text/plain needs image/png permission as well.
   */
  "com.atproto.repo.uploadBlob": {
    type: "procedure",
    auth: "required",
    input: "bytes",
    handler: async ({ services, caller, request }, bytes) => {
      const declaredType = mediaTypeEssence(request.headers.get("content-type"));
      if (!declaredType) throw invalidRequest("Content-Type must name the blob's media type");
      if (bytes.byteLength === 0) throw invalidRequest("The blob is empty");
      if (bytes.byteLength > services.config.blobMaxBytes) {
        throw new XrpcError(413, "BlobTooLarge", `Blobs may be at most ${services.config.blobMaxBytes} bytes`);
      }
      const detectedType = detectMediaType(bytes);
      caller.requireBlob(declaredType);
      if (detectedType && detectedType !== declaredType) caller.requireBlob(detectedType);
      const mimeType = detectedType ?? declaredType;
      const outcome = await services.blobs.putBlob(caller.did, { cid: rawCid(bytes), declaredType, detectedType, mimeType, bytes }, services.now());
      if (outcome.kind === "over-quota") throw quotaExceeded(outcome, bytes.byteLength, services.config.blobUnreferencedGraceMs);
      const { blob } = outcome;
      // What the app did (docs/decisions/0053): a blob stored, by the media type it was stored as.
      await services.activity.countBlob(caller, blob.mimeType);
      return { blob: { $type: "blob", ref: { $link: blob.cid }, mimeType: blob.mimeType, size: blob.size } };
    },
  },
};
