/**
 * How a blob is answered to getBlob (docs/decisions/0043): never as something a browser would render or run on this
 * origin, whatever was uploaded. An upload's stored type is the type sniffed from its bytes or, when they are not
 * recognised, the type its client declared (blob-type.ts): an HTML page with one invalid byte keeps a declared
 * `text/html`. So the answer names the stored type only for media a browser shows as media and never runs (images,
 * video, audio; not SVG, which is a document with scripts); everything else is `application/octet-stream`. And, as
 * the reference PDS answers every blob (packages/pds, api/com/atproto/sync/getBlob.ts): `attachment`, so that
 * opening its URL downloads it instead of showing it; `nosniff`, so that the browser never guesses another type; a
 * sandboxing CSP, so that even a rendered blob runs nothing and reaches nothing.
 */
const DISPLAYED_MEDIA = new Set([
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "image/avif",
  "image/heic",
  "image/heif",
  "image/bmp",
  "video/mp4",
  "video/mpeg",
  "video/webm",
  "video/ogg",
  "video/quicktime",
  "audio/mpeg",
  "audio/mp4",
  "audio/aac",
  "audio/ogg",
  "audio/opus",
  "audio/wav",
  "audio/webm",
  "audio/flac",
]);

/** The Content-Type a blob stored with `mimeType` is served with. */
export function servedType(mimeType: string): string {
  return DISPLAYED_MEDIA.has(mimeType) ? mimeType : "application/octet-stream";
}

/** getBlob's answer headers besides the hardening ones every answer has (server/security-headers.ts). */
export function servedBlobHeaders(blob: { mimeType: string; size: number }, cid: string): { contentType: string; headers: Record<string, string> } {
  return {
    contentType: servedType(blob.mimeType),
    headers: {
      "Content-Length": String(blob.size),
      // A CID is base32 or base58 letters and digits: nothing to quote in the file name.
      "Content-Disposition": `attachment; filename="${cid}"`,
      "X-Content-Type-Options": "nosniff",
      "Content-Security-Policy": "default-src 'none'; sandbox",
      // A CID names its bytes for ever; five minutes bounds how long a cache serves a blob deleted meanwhile.
      "Cache-Control": "public, max-age=300",
    },
  };
}
