import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import type { Config } from "../app/.server/config.ts";
import type { ApiRequest } from "../app/.server/http/api-request.ts";
import type { ApiResponse } from "../app/.server/http/api-response.ts";
import { AtriumError } from "../app/.server/errors/atrium-error.ts";
import { errorAnswerIn, type ApiRoute, type ApiRouteTable } from "../app/.server/http/api-routes.ts";
import { limitBucketOf } from "../app/.server/http/forwarded-address.ts";
import { bodyTooLarge } from "../app/.server/http/limits.ts";
import type { Metrics } from "../app/.server/observability/metrics.ts";
import type { ErrorReporter } from "../app/.server/observability/report-error.ts";
import type { RateLimitResult, RequestLimiter } from "../app/.server/security/request-limiter.ts";
import { clientAddress, drainRest, isBodyDrainable, requestIdOf, type RequestRecorder } from "./http-common.ts";
import { armResponseTimer, TOO_LATE } from "./response-timeout.ts";
import { CORS_HEADERS, HARDENING_HEADERS, preflightHeaders } from "./security-headers.ts";

/**
 * The JSON endpoints clients call directly, served from Node's own request
 * handler ahead of Express (docs/decisions/0005): these are the hot paths,
 * and Express's per-request work cost more CPU than the DPoP check itself.
 * Everything about an endpoint comes from its entry in the route table
 * (app/.server/http/api-routes.ts). In order: security and CORS headers,
 * preflights, methods, per-address limits, body limits, the response
 * timeout, draining unread bodies, the request id, and the request's log
 * line and metrics (docs/decisions/0014).
 */

export type ApiServerOptions = {
  config: Config;
  limiter: RequestLimiter;
  recorder: RequestRecorder;
  metrics: Pick<Metrics, "rateLimited">;
  /** Unexpected errors: logged with their stack (services.reportError). */
  report: ErrorReporter;
};

/** The route serving a request target, when it is one of the API paths (origin-form targets only). */
export function apiRouteOf(routes: ApiRouteTable, url: string | undefined): { route: ApiRoute; path: string } | undefined {
  if (!url || url.charCodeAt(0) !== 47 /* "/" */) return undefined;
  const query = url.indexOf("?");
  const path = query === -1 ? url : url.slice(0, query);
  const route = routes.find(path);
  return route ? { route, path } : undefined;
}

export function createApiServer({ config, limiter, recorder, metrics, report }: ApiServerOptions) {
  const perMinute = { par: config.rateLimits.parPerMinute, token: config.rateLimits.tokenPerMinute, xrpc: config.rateLimits.xrpcPerMinute };
  const context: ApiContext = { issuer: config.issuer, recorder, report, requestTimeoutMs: config.requestTimeoutMs, trustProxy: config.trustProxy };

  /**
   * Per-address limits, then the request: counted in memory and admitted at once while the address is well below its
   * limit; otherwise the database decides first (near the limit, or a new window), and a refusal is 429 with
   * Retry-After.
   */
  const limitThenAdmit = (req: IncomingMessage, request: NodeApiRequest, route: ApiRoute): void => {
    if (!route.limit) return admit(request, undefined);
    const key = `requests:${route.limit}:${limitBucketOf(clientAddress(req, config.trustProxy))}`;
    const counted = limiter.countInMemory(key, perMinute[route.limit]);
    if (counted) return admit(request, limitAnswer(route, counted));
    void limiter.decide(key, perMinute[route.limit], 60_000).then(
      (result) => admit(request, limitAnswer(route, result)),
      (error: unknown) => send(request, serverError(request, error)),
    );
  };

  const limitAnswer = (route: ApiRoute, result: RateLimitResult): ApiResponse | undefined => {
    if (result.allowed) return undefined;
    metrics.rateLimited(route.limit!);
    const message = `Too many requests from this address; try again in ${result.retryAfterSeconds} seconds`;
    const error = new AtriumError("temporarily_unavailable", message, { status: 429, xrpcName: "RateLimitExceeded", retryAfterSeconds: result.retryAfterSeconds });
    return errorAnswerIn(route.errorShape, error);
  };

  return function serveApi(req: IncomingMessage, res: ServerResponse, route: ApiRoute, path: string): void {
    const request = new NodeApiRequest(req, res, route, path, context, requestIdOf(req, config.trustProxy));

    if (req.method === "OPTIONS" && route.cors) return send(request, { status: 204, headers: preflightHeaders(route.methods), body: null });
    if (!(route.methods as readonly string[]).includes(req.method ?? "")) {
      const allow = route.methods.join(", ");
      // RFC 9110 §15.5.6: 405 names the methods the endpoint does serve.
      const error = new AtriumError("invalid_request", `Method not allowed; use ${allow}`, { status: 405, xrpcName: "InvalidRequest" });
      return send(request, errorAnswerIn(route.errorShape, error, { Allow: allow }));
    }
    limitThenAdmit(req, request, route);
  };
}

/** After the limit check: the refusal, or the size check and then the endpoint. */
function admit(request: NodeApiRequest, limited: ApiResponse | undefined): void {
  if (limited) return send(request, limited);
  const { route, req, res } = request;
  if (Number(req.headers["content-length"] ?? 0) > route.bodyLimit) return send(request, errorAnswerIn(route.errorShape, bodyTooLarge(route.bodyLimit)));
  const timer = armResponseTimer(request.context.requestTimeoutMs, res, answerTooLate, request);
  void respond(request, timer);
}

/** What every request of the API handler shares: made once, referenced by each request. */
type ApiContext = { issuer: string; recorder: RequestRecorder; report: ErrorReporter; requestTimeoutMs: number; trustProxy: Config["trustProxy"] };

const TOO_LATE_ERROR = new AtriumError("temporarily_unavailable", TOO_LATE.message, {
  status: 503,
  xrpcName: "InternalServerError",
  retryAfterSeconds: Number(TOO_LATE.retryAfterSeconds),
});

function answerTooLate(_res: ServerResponse, request: NodeApiRequest): void {
  send(request, errorAnswerIn(request.route.errorShape, TOO_LATE_ERROR));
}

async function respond(request: NodeApiRequest, timer: NodeJS.Timeout): Promise<void> {
  let response: ApiResponse;
  try {
    response = await request.route.handle(request, request.path);
  } catch (error) {
    response = serverError(request, error);
  }
  clearTimeout(timer);
  try {
    send(request, response);
  } catch (error) {
    // An answer Node refuses to write (say, a header value it rejects) becomes a 500, not an unhandled rejection; a
    // streamed body that will not be sent is cancelled, so that what it holds (an open blob file) is released.
    discardBody(response);
    if (request.res.headersSent) request.res.destroy();
    else send(request, serverError(request, error));
  }
}

function discardBody(response: ApiResponse): void {
  const body = response.body;
  if (body instanceof ReadableStream && !body.locked) void body.cancel().catch(() => {});
}

function serverError(request: NodeApiRequest, error: unknown): ApiResponse {
  request.context.report("Unhandled server error", error, request.requestId);
  return errorAnswerIn(request.route.errorShape, new AtriumError("server_error", "The server could not handle this request", { status: 500 }));
}

/**
 * Node's request seen through the small interface the endpoints read, and
 * what the handler keeps about it until it is answered (its response, route,
 * id and start time): one object per request. The body is read only when an
 * endpoint asks for it, and never past the route's body limit: the byte that
 * goes beyond it ends the reading with a 413 (`bodyTooLarge`), so no endpoint
 * ever takes the first part of a body for the whole. The unread rest is
 * drained or the connection closed (see `send`).
 */
export class NodeApiRequest implements ApiRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: ApiRequest["headers"] = this;
  /** performance.now() when the handler took the request. */
  readonly started = performance.now();
  /** The whole body once asked for; "streamed" once handed out piece by piece (`chunks`). */
  private body: Promise<Buffer> | "streamed" | undefined;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly route: ApiRoute,
    readonly path: string,
    readonly context: ApiContext,
    readonly requestId: string,
  ) {
    const query = req.url!.indexOf("?");
    this.method = req.method ?? "GET";
    this.url = context.issuer + path + (query === -1 ? "" : req.url!.slice(query));
  }

  /** Read only by the endpoints that need it (PAR's per-address bound). */
  get clientAddress(): string {
    return clientAddress(this.req, this.context.trustProxy);
  }

  get(name: string): string | null {
    const value = this.req.headers[name.toLowerCase()];
    return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
  }

  has(name: string): boolean {
    return this.get(name) !== null;
  }

  async text(): Promise<string> {
    return (await this.readBody()).toString("utf8");
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = await this.readBody();
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  }

  chunks(): AsyncIterable<Uint8Array> {
    if (this.body !== undefined) throw new Error("The request body was already read");
    this.body = "streamed";
    return streamBounded(this.req, this.route.bodyLimit);
  }

  private readBody(): Promise<Buffer> {
    if (this.body === "streamed") throw new Error("The request body was read as a stream");
    this.body ??= readBounded(this.req, this.route.bodyLimit);
    return this.body;
  }
}

/** The whole body, refused with 413 once it passes `limit` bytes (small bodies: forms, JSON; a 'data' listener is cheaper than an async iterator on the hot paths). */
function readBounded(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const stop = () => {
      req.off("data", onData);
      req.off("end", finish);
    };
    const finish = () => {
      stop();
      resolve(Buffer.concat(chunks));
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
      if (length > limit) {
        // Too long: stop reading (the response decides what happens to the rest), and never hand on the part read.
        req.pause();
        stop();
        reject(bodyTooLarge(limit));
      }
    };
    req.on("data", onData);
    req.once("end", finish);
    req.once("error", reject);
    req.once("close", () => {
      if (!req.complete) reject(new Error("request closed before its body ended"));
    });
  });
}

/**
 * A streamed body (a repository export, a proxied answer): read as the socket takes it. A source that fails midway
 * (an upstream cut off at its size cap) ends the connection, so the client never takes a cut answer for a whole one;
 * a client that leaves destroys the source, which cancels it (an export then releases its snapshot at once:
 * docs/decisions/0042). Ahead of the socket sit only Node's buffers: the readable side's highWaterMark and the
 * response's. Not stream.pipeline: its AbortController and the DOMException it makes at the end cost more than the
 * rest of a proxied call's passing on (docs/decisions/0048). A HEAD answer has no body: its source is let go unread.
 */
function sendStream(req: IncomingMessage, res: ServerResponse, body: Readable | ReadableStream<Uint8Array>): void {
  if (req.method === "HEAD") {
    dropBody(body);
    res.end();
    return;
  }
  const stream = body instanceof Readable ? body : Readable.fromWeb(body as NodeReadableStream<Uint8Array>);
  stream.once("error", () => res.destroy());
  res.once("close", () => {
    if (!stream.readableEnded) stream.destroy();
  });
  stream.pipe(res);
}

/**
 * An answer that will not be sent (the response timer answered first, or the client went): its stream is ended at
 * once, so that an upstream's answer does not keep its connection until the body timeout (30 s), nor an export its
 * snapshot.
 */
function dropBody(body: ApiResponse["body"]): void {
  if (body instanceof Readable) {
    body.on("error", () => {});
    body.destroy();
  } else if (body !== null && typeof body === "object" && "cancel" in body) {
    void body.cancel().catch(() => {});
  }
}

/**
 * The body piece by piece, each read from the connection once the one before was taken (TCP's window makes a fast
 * sender wait), refused with 413 once it passes `limit` bytes. The iterator leaves the request open when it ends
 * early, so that the refusal can still be answered and the rest drained (see `send`).
 */
async function* streamBounded(req: IncomingMessage, limit: number): AsyncGenerator<Uint8Array> {
  let length = 0;
  for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > limit) throw bodyTooLarge(limit);
    yield chunk;
  }
}

/**
 * Writes an answer in one go (headers and a serialized body), unless one was
 * already sent, with the hardening headers, the route's CORS headers, the
 * request id and, for the authorization server's endpoints, a fresh
 * DPoP-Nonce; then records it (log line, metrics). A refusal sent before the
 * body was read leaves the rest in the connection: it is drained afterwards,
 * or, when it is declared too large to drain, the answer closes the
 * connection. A streamed answer (service proxying) is recorded when its head
 * is written.
 */
function send(request: NodeApiRequest, response: ApiResponse): void {
  const { req, res, route } = request;
  if (res.headersSent || res.destroyed) return dropBody(response.body);
  const headers: Record<string, string> = route.cors ? { ...HARDENING_HEADERS, ...CORS_HEADERS, ...response.headers } : { ...HARDENING_HEADERS, ...response.headers };
  headers["X-Request-Id"] = request.requestId;
  if (route.dpopNonce) headers["DPoP-Nonce"] = route.dpopNonce();
  if (!req.complete && !isBodyDrainable(req)) headers.Connection = "close";
  const body = response.body;
  if (body === null || typeof body === "string" || body instanceof Uint8Array) {
    if (body !== null) headers["Content-Length"] = String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength);
    res.writeHead(response.status, headers);
    res.end(body ?? undefined);
  } else {
    res.writeHead(response.status, headers);
    sendStream(req, res, body);
  }
  drainRest(req);
  request.context.recorder.served(req, request.requestId, request.path, route.label ? route.label(request.path) : route.path, response.status, request.started);
}
