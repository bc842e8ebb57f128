import { detectMediaType, mediaTypeEssence } from "../../repo/blob-type.ts";
import { rawCid } from "../../repo/identifiers.ts";
import type { XrpcMethods } from "../xrpc-method.ts";
import { invalidRequest, XrpcError } from "../xrpc-error.ts";

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
    handler: ({ services, caller, request }, bytes) => {
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
      const blob = services.repo.putBlob(caller.did, { cid: rawCid(bytes), declaredType, detectedType, mimeType, bytes }, Date.now());
      return { blob: { $type: "blob", ref: { $link: blob.cid }, mimeType: blob.mimeType, size: blob.size } };
    },
  },
};
