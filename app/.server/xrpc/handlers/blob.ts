import { isValidDid } from "@atproto/syntax";
import { z } from "zod";
import type { PutBlobOutcome } from "../../blobs/blob-store.ts";
import { servedBlobHeaders } from "../../blobs/blob-serving.ts";
import { mediaTypeEssence } from "../../blobs/blob-type.ts";
import { BlobError } from "../../blobs/blobs.ts";
import { isBodyTooLarge } from "../../http/limits.ts";
import { isCidString } from "../../repo/identifiers.ts";
import { headOf, SyncError } from "../../sync/repo-sync.ts";
import { SECOND } from "../../util/time.ts";
import { bytesAnswer } from "../bytes-answer.ts";
import type { XrpcMethods } from "../xrpc-method.ts";
import { invalidRequest, XrpcError } from "../xrpc-error.ts";

/**
 * 413, as for a blob over ATRIUM_BLOB_MAX_BYTES: RFC 9110 §15.5.14, "the request content is larger than the server
 * is willing or able to process" — here, larger than what the account's quota has left (docs/decisions/0008).
 */
function quotaExceeded(refusal: Extract<PutBlobOutcome, { kind: "over-quota" }>, graceMs: number): XrpcError {
  const free = Math.max(0, refusal.quotaBytes - refusal.usedBytes);
  return new XrpcError(
    413,
    "BlobQuotaExceeded",
    `This blob (${refusal.size} bytes) does not fit in the account's blob quota: ${refusal.usedBytes} of ${refusal.quotaBytes} bytes are in use, ${free} free. ` +
      `Blobs that no record references are deleted ${graceMs / SECOND} seconds after upload.`,
  );
}

const getBlobParams = z.object({
  did: z.string().refine(isValidDid, "did must be a DID"),
  cid: z.string().refine(isCidString, "must be a CID"),
});

export const blobMethods: XrpcMethods = {
  /**
   * A raw body with its Content-Type, streamed into the blob store as it arrives (docs/decisions/0043). `blob:` is
   * checked against the declared type before any byte is read and, when the bytes say otherwise, against the detected
   * type too: a PNG declared as text/plain needs image/png permission as well.
   */
  "com.atproto.repo.uploadBlob": {
    type: "procedure",
    auth: "required",
    input: "stream",
    handler: async ({ services, caller, request }, body) => {
      const declaredType = mediaTypeEssence(request.headers.get("content-type"));
      if (!declaredType) throw invalidRequest("Content-Type must name the blob's media type");
      caller.requireBlob(declaredType);
      const { blobMaxBytes, blobUnreferencedGraceMs } = services.config;
      let outcome: Awaited<ReturnType<typeof services.blobs.upload>>;
      try {
        outcome = await services.blobs.upload(caller.did, {
          declaredType,
          body,
          authorizeDetected: (detectedType) => {
            if (detectedType && detectedType !== declaredType) caller.requireBlob(detectedType);
          },
        });
      } catch (error) {
        // The route's body limit is this one: its 413 says so in the blob's words.
        throw isBodyTooLarge(error) ? BlobError.tooLarge(blobMaxBytes) : error;
      }
      if (outcome.kind === "over-quota") throw quotaExceeded(outcome, blobUnreferencedGraceMs);
      const { blob } = outcome;
      return { blob: { $type: "blob", ref: { $link: blob.cid }, mimeType: blob.mimeType, size: blob.size } };
    },
  },

  /**
   * "Get a blob associated with a given account", streamed from the blob store (docs/decisions/0043): only a blob a
   * record of the account references, as the reference PDS serves, and never as a page of this origin
   * (blobs/blob-serving.ts).
   */
  "com.atproto.sync.getBlob": {
    type: "query",
    auth: "none",
    handler: async ({ services, request, params }) => {
      const input = getBlobParams.parse(Object.fromEntries(params));
      await headOf(services.repo, input.did);
      const notFound = () => new SyncError("BlobNotFound", `Could not find blob: ${input.cid}`);
      if (request.method === "HEAD") {
        // The headers alone: the bytes are not opened.
        const blob = await services.blobs.exists(input.did, input.cid);
        if (!blob) throw notFound();
        const served = servedBlobHeaders(blob, input.cid);
        return bytesAnswer(served.contentType, null, served.headers);
      }
      const blob = await services.blobs.download(input.did, input.cid);
      if (!blob) throw notFound();
      const served = servedBlobHeaders(blob, input.cid);
      return bytesAnswer(served.contentType, blob.body, served.headers);
    },
  },
};
