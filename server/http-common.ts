import type { IncomingMessage } from "node:http";

/** What both entries (the API handler and Express for the screens) need to agree on. */

/** Request bodies other than blob uploads are small (forms, JSON). */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Unread request bodies up to this size are drained so the connection stays usable; larger ones close it. */
const MAX_DRAIN_BYTES = 16 * 1024 * 1024;

/**
 * Whether the unread rest of a request body can be drained after the answer
 * (so the connection can carry the next request). A request with neither
 * Content-Length nor Transfer-Encoding has no body (RFC 9112 §6.3); a chunked
 * one has no known end, so the answer closes the connection instead.
 */
export function isBodyDrainable(req: IncomingMessage): boolean {
  if (req.headers["transfer-encoding"] !== undefined) return false;
  const declared = req.headers["content-length"];
  return declared === undefined || Number(declared) <= MAX_DRAIN_BYTES;
}

/**
 * The client's address. Behind a trusted reverse proxy (ATRIUM_TRUST_PROXY)
 * it is the left-most X-Forwarded-For entry, as Express's `trust proxy: true`
 * reads it; otherwise the socket's peer, whatever headers say.
 */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = req.headers["x-forwarded-for"];
    const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(",")[0]?.trim();
    if (first) return first;
  }
  return req.socket.remoteAddress ?? "unknown";
}

export function logRequest(method: string | undefined, path: string, status: number, started: bigint): void {
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  console.log(`${method} ${path} ${status} ${ms.toFixed(1)}ms`);
}
