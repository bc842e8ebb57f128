import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { clientAddressOf, peerIsTrustedProxy, type TrustedProxies } from "../app/.server/http/forwarded-address.ts";
import type { Logger } from "../app/.server/observability/logger.ts";
import type { Metrics } from "../app/.server/observability/metrics.ts";

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

/** What an incoming X-Request-Id may be: the ids proxies generate (hex, UUIDs, base64url), nothing that could mislead a reader of the log. */
const REQUEST_ID = /^[A-Za-z0-9._:+=-]{8,128}$/;

/**
 * The id of a request, sent back as X-Request-Id and written on every log
 * line about it (docs/decisions/0014): the X-Request-Id a trusted reverse
 * proxy set (ATRIUM_TRUST_PROXY, docs/decisions/0006), so that its log and
 * ours can be joined, when it looks like an id; otherwise a fresh UUID. A
 * client that reaches the server directly does not choose its id.
 */
export function requestIdOf(req: IncomingMessage, trusted: TrustedProxies): string {
  const incoming = req.headers["x-request-id"];
  if (typeof incoming === "string" && trusted.kind !== "none" && REQUEST_ID.test(incoming) && peerIsTrustedProxy(req.socket.remoteAddress, trusted)) return incoming;
  return randomUUID();
}

const MAX_LOGGED_PATH = 512;

/**
 * One log line (when request logs are on) and the request metrics for every
 * answered request, of both entries. The path is logged without its query
 * (request_uri, codes and states travel there), cut at 512 characters;
 * metrics get only `route`, a template from a fixed set. Time is
 * performance.now() milliseconds.
 */
export class RequestRecorder {
  private readonly logRequests: boolean;
  private readonly debug: boolean;

  constructor(
    private readonly log: Logger & { isLevelEnabled?(level: string): boolean },
    private readonly metrics: Metrics,
    logRequests: boolean,
    private readonly trustProxy: TrustedProxies,
  ) {
    // Decided once: a level above info (or silent) makes no line, so none is built.
    this.logRequests = logRequests && (log.isLevelEnabled?.("info") ?? true);
    this.debug = this.logRequests && (log.isLevelEnabled?.("debug") ?? false);
  }

  served(req: IncomingMessage, requestId: string, path: string, route: string, status: number, started: number): void {
    const ms = performance.now() - started;
    const method = req.method ?? "";
    if (this.logRequests) {
      const logged = path.length > MAX_LOGGED_PATH ? `${path.slice(0, MAX_LOGGED_PATH)}…` : path;
      const fields = { reqId: requestId, method, path: logged, route, status, ms: Math.round(ms * 10) / 10 };
      // At debug, also who asked: the client address (docs/decisions/0006) and the User-Agent.
      this.log.info(this.debug ? { ...fields, ip: clientAddress(req, this.trustProxy), ua: req.headers["user-agent"]?.slice(0, 256) } : fields, "request");
    }
    this.metrics.requestServed(route, method, status, ms / 1000);
  }
}
