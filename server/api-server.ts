import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import type { Config } from "../app/.server/config.ts";
import type { ApiRequest } from "../app/.server/http/api-request.ts";
import type { ApiResponse } from "../app/.server/http/api-response.ts";
import { AtriumError } from "../app/.server/errors/atrium-error.ts";
import { errorAnswerIn, type ApiRoute, type ApiRouteTable } from "../app/.server/http/api-routes.ts";
import { limitBucketOf } from "../app/.server/http/forwarded-address.ts";
import type { RequestLimiter } from "../app/.server/security/request-limiter.ts";
import { clientAddress, drainRest, isBodyDrainable, logRequest } from "./http-common.ts";
import { armResponseTimer, TOO_LATE } from "./response-timeout.ts";
import { CORS_HEADERS, HARDENING_HEADERS, preflightHeaders } from "./security-headers.ts";

/**
 * The JSON endpoints clients call directly, served from Node's own request
 * handler ahead of Express (docs/decisions/0005): these are the hot paths,
 * and Express's per-request work cost more CPU than the DPoP check itself.
 * Everything about an endpoint comes from its entry in the route table
 * (app/.server/http/api-routes.ts). In order: security and CORS headers,
 * preflights, methods, per-address limits, body limits, the response
 * timeout, draining unread bodies, and the request log.
 */

export type ApiServerOptions = {
  config: Config;
  limiter: RequestLimiter;
};

/** The route serving a request target, when it is one of the API paths (origin-form targets only). */
export function apiRouteOf(routes: ApiRouteTable, url: string | undefined): { route: ApiRoute; path: string } | undefined {
  if (!url || url.charCodeAt(0) !== 47 /* "/" */) return undefined;
  const query = url.indexOf("?");
  const path = query === -1 ? url : url.slice(0, query);
  const route = routes.find(path);
  return route ? { route, path } : undefined;
}

export function createApiServer({ config, limiter }: ApiServerOptions) {
  const perMinute = { par: config.rateLimits.parPerMinute, token: config.rateLimits.tokenPerMinute, xrpc: config.rateLimits.xrpcPerMinute };

  /** Per-address limits: 429 with Retry-After, or undefined when the request may go on. */
  const checkLimit = (req: IncomingMessage, route: ApiRoute): ApiResponse | undefined => {
    if (!route.limit) return undefined;
    const result = limiter.hit(`requests:${route.limit}:${limitBucketOf(clientAddress(req, config.trustProxy))}`, perMinute[route.limit], 60_000);
    if (result.allowed) return undefined;
    const message = `Too many requests from this address; try again in ${result.retryAfterSeconds} seconds`;
    const error = new AtriumError("temporarily_unavailable", message, { status: 429, xrpcName: "RateLimitExceeded", retryAfterSeconds: result.retryAfterSeconds });
    return errorAnswerIn(route.errorShape, error);
  };

  return function serveApi(req: IncomingMessage, res: ServerResponse, route: ApiRoute, path: string): void {
    const started = config.logRequests ? process.hrtime.bigint() : 0n;
    if (config.logRequests) res.on("finish", () => logRequest(req.method, path, res.statusCode, started));

    if (req.method === "OPTIONS" && route.cors) return send(req, res, route, { status: 204, headers: preflightHeaders(route.methods), body: null });
    if (!(route.methods as readonly string[]).includes(req.method ?? "")) {
      const allow = route.methods.join(", ");
      // RFC 9110 §15.5.6: 405 names the methods the endpoint does serve.
      const error = new AtriumError("invalid_request", `Method not allowed; use ${allow}`, { status: 405, xrpcName: "InvalidRequest" });
      return send(req, res, route, errorAnswerIn(route.errorShape, error, { Allow: allow }));
    }
    const limited = checkLimit(req, route);
    if (limited) return send(req, res, route, limited);
    if (Number(req.headers["content-length"] ?? 0) > route.bodyLimit) {
      const error = new AtriumError("invalid_request", `Request body larger than ${route.bodyLimit} bytes`, { status: 413, xrpcName: "PayloadTooLarge" });
      return send(req, res, route, errorAnswerIn(route.errorShape, error));
    }

    const timer = armResponseTimer(config.requestTimeoutMs, res, answerTooLate, req, route);
    void respond(req, res, timer, route, path, new NodeApiRequest(req, path, config.issuer, route.bodyLimit));
  };
}

const TOO_LATE_ERROR = new AtriumError("temporarily_unavailable", TOO_LATE.message, {
  status: 503,
  xrpcName: "InternalServerError",
  retryAfterSeconds: Number(TOO_LATE.retryAfterSeconds),
});

/*
 * Per-request code here creates no closures: functions and methods are
 * defined once (tsx, which runs this file, wraps every closure it creates at
 * run time to keep its name, a measurable cost on the hot path).
 */

function answerTooLate(res: ServerResponse, req: IncomingMessage, route: ApiRoute): void {
  send(req, res, route, errorAnswerIn(route.errorShape, TOO_LATE_ERROR));
}

async function respond(req: IncomingMessage, res: ServerResponse, timer: NodeJS.Timeout, route: ApiRoute, path: string, request: ApiRequest): Promise<void> {
  let response: ApiResponse;
  try {
    response = await route.handle(request, path);
  } catch (error) {
    response = serverError(route, error);
  }
  clearTimeout(timer);
  try {
    send(req, res, route, response);
  } catch (error) {
    // An answer Node refuses to write (say, a header value it rejects) becomes a 500, not an unhandled rejection.
    if (res.headersSent) res.destroy();
    else send(req, res, route, serverError(route, error));
  }
}

function serverError(route: ApiRoute, error: unknown): ApiResponse {
  console.error("Unhandled server error:", error);
  return errorAnswerIn(route.errorShape, new AtriumError("server_error", "The server could not handle this request", { status: 500 }));
}

/**
 * Node's request seen through the small interface the endpoints read. The
 * body is read only when an endpoint asks for it, and at most `limit` + 1
 * bytes of it: an endpoint refuses a body longer than its own limit by length,
 * and the unread rest is drained or the connection closed (see `send`).
 */
export class NodeApiRequest implements ApiRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: ApiRequest["headers"] = this;
  private body: Promise<Buffer> | undefined;

  constructor(
    private readonly req: IncomingMessage,
    path: string,
    issuer: string,
    private readonly limit: number,
  ) {
    const query = req.url!.indexOf("?");
    this.method = req.method ?? "GET";
    this.url = issuer + path + (query === -1 ? "" : req.url!.slice(query));
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

  private readBody(): Promise<Buffer> {
    this.body ??= readBounded(this.req, this.limit + 1);
    return this.body;
  }
}

function readBounded(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const finish = () => {
      req.off("data", onData);
      resolve(Buffer.concat(chunks));
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
      if (length >= maxBytes) {
        // Enough to know it is too long: stop reading; the response decides what happens to the rest.
        req.pause();
        finish();
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
 * Writes an answer in one go (headers and a serialized body), unless one was
 * already sent, with the hardening headers, the route's CORS headers and, for
 * the authorization server's endpoints, a fresh DPoP-Nonce. A refusal sent
 * before the body was read leaves the rest in the connection: it is drained
 * afterwards, or, when it is declared too large to drain, the answer closes
 * the connection.
 */
function send(req: IncomingMessage, res: ServerResponse, route: ApiRoute, response: ApiResponse): void {
  if (res.headersSent || res.destroyed) return;
  const headers: Record<string, string> = route.cors ? { ...HARDENING_HEADERS, ...CORS_HEADERS, ...response.headers } : { ...HARDENING_HEADERS, ...response.headers };
  if (route.dpopNonce) headers["DPoP-Nonce"] = route.dpopNonce();
  if (!req.complete && !isBodyDrainable(req)) headers.Connection = "close";
  const body = response.body;
  if (body === null || typeof body === "string" || body instanceof Uint8Array) {
    if (body !== null) headers["Content-Length"] = String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength);
    res.writeHead(response.status, headers);
    res.end(body ?? undefined);
    drainRest(req);
    return;
  }
  res.writeHead(response.status, headers);
  const stream = Readable.fromWeb(body as NodeReadableStream<Uint8Array>);
  stream.on("error", () => res.destroy());
  stream.pipe(res);
  drainRest(req);
}
