import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import type { Config } from "../app/.server/config.ts";
import type { ApiRequest } from "../app/.server/http/api-request.ts";
import type { ApiResponse } from "../app/.server/http/api-response.ts";
import type { RequestLimiter } from "../app/.server/security/request-limiter.ts";
import { clientAddress, drainRest, isBodyDrainable, logRequest, MAX_BODY_BYTES } from "./http-common.ts";

/**
 * The JSON endpoints clients call directly (DESIGN §1: discovery, PAR, token,
 * revoke, userinfo, jwks, /xrpc), served from Node's own request handler
 * ahead of Express: these are the hot paths, and Express's per-request work
 * (its request/response wrappers and middleware chain) cost more CPU than the
 * DPoP check itself. Everything Express did for them is here, in order:
 * security and CORS headers, preflights, per-address limits, body limits,
 * the response timeout, draining unread bodies, and the request log.
 */

/** The API dispatcher the server build exports (app/entry.server.tsx → app/.server/http/api-routes.ts). */
export type ApiHandler = (path: string, request: ApiRequest) => Promise<ApiResponse> | undefined;

/** DESIGN §1: endpoints browser-based clients call directly get CORS; the screens do not. */
function isCorsPath(pathname: string): boolean {
  return (
    pathname.startsWith("/.well-known/") ||
    pathname.startsWith("/xrpc/") ||
    pathname === "/oauth/par" ||
    pathname === "/oauth/token" ||
    pathname === "/oauth/revoke" ||
    pathname === "/oauth/userinfo" ||
    pathname === "/oauth/jwks"
  );
}

/** The path of a request target, when it is one of the API paths (origin-form targets only). */
export function apiPathOf(url: string | undefined): string | undefined {
  if (!url || url.charCodeAt(0) !== 47 /* "/" */) return undefined;
  const query = url.indexOf("?");
  const path = query === -1 ? url : url.slice(0, query);
  return isCorsPath(path) ? path : undefined;
}

/** Sent on every API answer (the same hardening headers as the screens, minus the page-only CSP). */
const BASE_HEADERS: Readonly<Record<string, string>> = {
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers": "DPoP-Nonce, WWW-Authenticate",
};

const PREFLIGHT_HEADERS: Readonly<Record<string, string>> = {
  ...BASE_HEADERS,
  "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
  "Access-Control-Allow-Headers": "Content-Type, DPoP, Authorization, atproto-proxy, atproto-accept-labelers",
  "Access-Control-Max-Age": "600",
};

type ErrorShape = "xrpc" | "oauth";

/** A refusal of the entry itself, in the error shape of the endpoint addressed (XRPC or OAuth JSON). */
function refusal(shape: ErrorShape, status: number, xrpcError: string, oauthError: string, message: string, headers: Record<string, string> = {}): ApiResponse {
  const body = shape === "xrpc" ? { error: xrpcError, message } : { error: oauthError, error_description: message };
  return { status, headers: { "Content-Type": "application/json", "Cache-Control": "no-store", ...headers }, body: JSON.stringify(body) };
}

export type ApiServerOptions = {
  config: Config;
  limiter: RequestLimiter;
  /** The dispatcher; a promise only in development, where Vite loads the app per request. */
  handler: () => ApiHandler | Promise<ApiHandler>;
};

export function createApiServer({ config, limiter, handler }: ApiServerOptions) {
  const limitFor = (path: string): [string, number] | undefined => {
    if (path === "/oauth/par") return ["par", config.rateLimits.parPerMinute];
    if (path === "/oauth/token") return ["token", config.rateLimits.tokenPerMinute];
    if (path.startsWith("/xrpc/")) return ["xrpc", config.rateLimits.xrpcPerMinute];
    return undefined;
  };

  /** Per-address limits (DESIGN 4.5): 429 with Retry-After, or undefined when the request may go on. */
  const checkLimits = (req: IncomingMessage, path: string, shape: ErrorShape): ApiResponse | undefined => {
    const rule = limitFor(path);
    if (!rule) return undefined;
    const [name, limit] = rule;
    const result = limiter.hit(`requests:${name}:${clientAddress(req, config.trustProxy)}`, limit, 60_000);
    if (result.allowed) return undefined;
    const message = `Too many requests from this address; try again in ${result.retryAfterSeconds} seconds`;
    return refusal(shape, 429, "RateLimitExceeded", "temporarily_unavailable", message, { "Retry-After": String(result.retryAfterSeconds) });
  };

  return function serveApi(req: IncomingMessage, res: ServerResponse, path: string): void {
    const started = config.logRequests ? process.hrtime.bigint() : 0n;
    if (config.logRequests) res.on("finish", () => logRequest(req.method, path, res.statusCode, started));
    const shape: ErrorShape = path.startsWith("/xrpc/") ? "xrpc" : "oauth";

    if (req.method === "OPTIONS") return send(req, res, { status: 204, headers: PREFLIGHT_HEADERS, body: null });
    const limited = checkLimits(req, path, shape);
    if (limited) return send(req, res, limited);
    const bodyLimit = path === "/xrpc/com.atproto.repo.uploadBlob" ? config.blobMaxBytes : MAX_BODY_BYTES;
    if (Number(req.headers["content-length"] ?? 0) > bodyLimit) {
      return send(req, res, refusal(shape, 413, "PayloadTooLarge", "invalid_request", `Request body larger than ${bodyLimit} bytes`));
    }

    // A request the app has not answered in time gets 503 instead of hanging.
    const timer = setTimeout(answerTooLate, config.requestTimeoutMs, req, res, shape);
    void respond(req, res, timer, shape, handler, path, new NodeApiRequest(req, path, config.issuer, bodyLimit));
  };
}

/*
 * Per-request code here creates no closures: functions and methods are
 * defined once (tsx, which runs this file, wraps every closure it creates at
 * run time to keep its name, a measurable cost on the hot path).
 */

function answerTooLate(req: IncomingMessage, res: ServerResponse, shape: ErrorShape): void {
  send(req, res, refusal(shape, 503, "InternalServerError", "temporarily_unavailable", "The server took too long to answer", { "Retry-After": "5" }));
}

async function respond(
  req: IncomingMessage,
  res: ServerResponse,
  timer: NodeJS.Timeout,
  shape: ErrorShape,
  handler: ApiServerOptions["handler"],
  path: string,
  request: ApiRequest,
): Promise<void> {
  let response: ApiResponse;
  try {
    const handle = handler();
    const pending = (typeof (handle as Promise<ApiHandler>).then === "function" ? await handle : (handle as ApiHandler))(path, request);
    response = (pending && (await pending)) ?? refusal(shape, 404, "NotFound", "invalid_request", "Nothing is served at this address");
  } catch (error) {
    response = serverError(shape, error);
  }
  clearTimeout(timer);
  try {
    send(req, res, response);
  } catch (error) {
    // An answer Node refuses to write (say, a header value it rejects) becomes a 500, not an unhandled rejection.
    if (res.headersSent) res.destroy();
    else send(req, res, serverError(shape, error));
  }
}

function serverError(shape: ErrorShape, error: unknown): ApiResponse {
  console.error("Unhandled server error:", error);
  return refusal(shape, 500, "InternalServerError", "server_error", "The server could not handle this request");
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
 * already sent. A refusal sent before the body was read leaves the rest in
 * the connection: it is drained afterwards, or, when it is declared too large
 * to drain, the answer closes the connection.
 */
function send(req: IncomingMessage, res: ServerResponse, response: ApiResponse): void {
  if (res.headersSent || res.destroyed) return;
  const headers: Record<string, string> = { ...BASE_HEADERS, ...response.headers };
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
