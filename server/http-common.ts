import type { IncomingMessage } from "node:http";
import { clientAddressOf, type TrustedProxies } from "../app/.server/http/forwarded-address.ts";

/** What both entries (the API handler and Express for the screens) need to agree on. */

/** Unread request bodies up to this size are drained so the connection stays usable; larger ones close it. */
const MAX_DRAIN_BYTES = 16 * 1024 * 1024;

/**
 * Whether the unread rest of a request body can be drained after the answer
 * (so the connection can carry the next request): a body declared larger
 * than the drain limit cannot, and the answer closes the connection instead.
 * A chunked body has no declared size: it is drained too, and cut off once
 * the limit is passed (see `drainRest`).
 */
export function isBodyDrainable(req: IncomingMessage): boolean {
  const declared = req.headers["content-length"];
  return declared === undefined || Number(declared) <= MAX_DRAIN_BYTES;
}

/**
 * Reads and discards what is left of a request body after its answer was
 * sent. Closing the connection with unread data would make the kernel reset
 * it, and a client still sending could lose the answer; draining lets it read
 * the answer and reuse the connection. Past MAX_DRAIN_BYTES the connection is
 * cut, so a client cannot keep it busy with an endless body.
 */
export function drainRest(req: IncomingMessage): void {
  if (req.complete) return;
  let drained = 0;
  req.on("data", (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > MAX_DRAIN_BYTES) req.socket.destroy();
  });
  req.resume();
}

/**
 * The client's address, the key of every per-address limit, for both entries
 * (the API handler and Express): the socket peer, or behind trusted reverse
 * proxies (ATRIUM_TRUST_PROXY) the address the nearest untrusted hop had,
 * read from the right of X-Forwarded-For (docs/decisions/0006).
 */
export function clientAddress(req: IncomingMessage, trusted: TrustedProxies): string {
  return clientAddressOf(req.socket.remoteAddress, req.headers["x-forwarded-for"], trusted) ?? "unknown";
}

export function logRequest(method: string | undefined, path: string, status: number, started: bigint): void {
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  console.log(`${method} ${path} ${status} ${ms.toFixed(1)}ms`);
}
