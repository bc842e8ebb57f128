import { randomBytes } from "node:crypto";
import type { NextFunction, Request, Response } from "express";
import type { Config } from "../app/.server/config.ts";
import type { RateLimiter } from "../app/.server/security/rate-limiter.ts";

/**
 * The Express middleware of the entry (server.ts): security headers, CORS,
 * body limits and draining, per-address request limits, timeouts, origin
 * checks for the screens, and Express's own errors in the endpoint's shape.
 */

const MAX_BODY_BYTES = 1024 * 1024;

/** DESIGN §1: endpoints browser-based clients call directly get CORS; the screens do not. */
export function isCorsPath(pathname: string): boolean {
  return (
    pathname.startsWith("/.well-known/") ||
    pathname.startsWith("/xrpc/") ||
    ["/oauth/par", "/oauth/token", "/oauth/revoke", "/oauth/userinfo", "/oauth/jwks"].includes(pathname)
  );
}

export function cors(req: Request, res: Response, next: NextFunction) {
  if (!isCorsPath(req.path)) return next();
  res.setHeader("Access-Control-Allow-Origin", "*");
  res.setHeader("Access-Control-Expose-Headers", "DPoP-Nonce, WWW-Authenticate");
  if (req.method === "OPTIONS") {
    res.setHeader("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    res.setHeader("Access-Control-Allow-Headers", "Content-Type, DPoP, Authorization, atproto-proxy, atproto-accept-labelers");
    res.setHeader("Access-Control-Max-Age", "600");
    res.status(204).end();
    return;
  }
  next();
}

export function securityHeaders(dev: boolean) {
  return (req: Request, res: Response, next: NextFunction) => {
    res.setHeader("X-Content-Type-Options", "nosniff");
    // The authorize URL carries a request_uri: never leak it to another site.
    res.setHeader("Referrer-Policy", "no-referrer");
    res.setHeader("X-Frame-Options", "DENY");
    // JSON endpoints render no HTML: no script nonce to make (a hot path).
    if (isCorsPath(req.path)) return next();
    const nonce = randomBytes(16).toString("base64");
    res.locals.cspNonce = nonce;
    if (!dev) {
      res.setHeader(
        "Content-Security-Policy",
        [
          "default-src 'self'",
          `script-src 'self' 'nonce-${nonce}'`,
          "style-src 'self'",
          "img-src 'self' https: data:",
          "connect-src 'self'",
          "object-src 'none'",
          "base-uri 'none'",
          "frame-ancestors 'none'",
        ].join("; "),
      );
    }
    next();
  };
}

/**
 * Refuses oversized bodies before any route reads them (413, in the error
 * shape of the endpoint: XRPC or OAuth JSON). Uploads may be as large as the
 * blob limit; everything else is small.
 */
export function bodyLimit(config: Config) {
  return (req: Request, res: Response, next: NextFunction) => {
    const limit = req.path === "/xrpc/com.atproto.repo.uploadBlob" ? config.blobMaxBytes : MAX_BODY_BYTES;
    const declared = Number(req.headers["content-length"] ?? 0);
    if (declared > limit) {
      const message = `Request body larger than ${limit} bytes`;
      const body = req.path.startsWith("/xrpc/")
        ? { error: "PayloadTooLarge", message }
        : { error: "invalid_request", error_description: message };
      res.status(413).json(body);
      return;
    }
    // A body without Content-Length is measured by the route that reads it (and answered 413 there);
    // only one far beyond the limit is cut off here, so the connection cannot be used to stream forever.
    let seen = 0;
    req.on("data", (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > 2 * limit) req.destroy(new Error("request body too large"));
    });
    next();
  };
}

/** Unread request bodies up to this size are drained so the connection stays usable; larger ones close it. */
const MAX_DRAIN_BYTES = 16 * 1024 * 1024;

/**
 * A response sent before its request body was read (a refusal) would leave
 * the rest of the body in the connection and stall the next request on it:
 * the unread rest is drained, or, when it is very large or of unknown size,
 * the response closes the connection.
 */
export function drainUnreadBody(req: Request, res: Response, next: NextFunction) {
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => Response;
  res.writeHead = ((...args: unknown[]) => {
    const declared = Number(req.headers["content-length"] ?? NaN);
    const drainable = Number.isFinite(declared) && declared <= MAX_DRAIN_BYTES;
    if (!req.complete && !drainable) res.setHeader("Connection", "close");
    return writeHead(...args);
  }) as typeof res.writeHead;
  res.on("finish", () => {
    if (!req.complete) req.resume();
  });
  next();
}

/** Errors Express raises itself (e.g. an undecodable path), in the shape of the endpoint that was addressed. */
export function expressErrors(error: Error & { status?: number; statusCode?: number }, req: Request, res: Response, next: NextFunction) {
  if (res.headersSent) return next(error);
  const status = error.status ?? error.statusCode ?? 500;
  const message = status < 500 ? "The request could not be understood" : "The server could not handle this request";
  if (status >= 500) console.error("Unhandled server error:", error);
  if (req.path.startsWith("/xrpc/")) res.status(status).json({ error: status < 500 ? "InvalidRequest" : "InternalServerError", message });
  else if (isCorsPath(req.path) || req.path.startsWith("/oauth/")) res.status(status).json({ error: status < 500 ? "invalid_request" : "server_error", error_description: message });
  else res.status(status).type("html").send(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Error ${status}</title></head><body><main><h1>${message}</h1><p><a href="/">Go to the start page</a></p></main></body></html>`);
}

/**
 * Requests are handled as addressed to the issuer, whatever Host a reverse
 * proxy passed on: URLs the app builds (DPoP htu, redirects) use the public
 * origin, and Remix's own origin check compares against it.
 */
export function canonicalHost(config: Config) {
  return (req: Request, _res: Response, next: NextFunction) => {
    req.headers.host = config.publicUrl.host;
    delete req.headers["x-forwarded-host"];
    next();
  };
}

/**
 * DESIGN 4.5: a state-changing post to a screen must come from our own
 * origin. Refused here with a readable page (Remix would otherwise abort
 * with a bare 500).
 */
export function screenOriginCheck(config: Config) {
  return (req: Request, res: Response, next: NextFunction) => {
    const origin = req.headers.origin;
    if (req.method === "GET" || req.method === "HEAD" || isCorsPath(req.path) || origin === undefined || origin === config.issuer) return next();
    res
      .status(403)
      .type("html")
      .send(
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Form refused</title></head><body><main><h1>This form could not be accepted</h1><p>It did not come from this server. Go back to the app and start again.</p><p><a href="/">Go to the start page</a></p></main></body></html>`,
      );
  };
}

/**
 * Requests per client address per minute for the endpoints clients call
 * directly (DESIGN 4.5). Counted in the shared database, so the limits hold
 * across server processes. Answers 429 with Retry-After in the endpoint's
 * error shape.
 */
export function requestLimits(config: Config, limiter: RateLimiter) {
  const limitFor = (path: string): [string, number] | undefined => {
    if (path === "/oauth/par") return ["par", config.rateLimits.parPerMinute];
    if (path === "/oauth/token") return ["token", config.rateLimits.tokenPerMinute];
    if (path.startsWith("/xrpc/")) return ["xrpc", config.rateLimits.xrpcPerMinute];
    return undefined;
  };
  return (req: Request, res: Response, next: NextFunction) => {
    const rule = limitFor(req.path);
    if (!rule || req.method === "OPTIONS") return next();
    const [name, limit] = rule;
    const result = limiter.hit(`requests:${name}:${req.ip ?? req.socket.remoteAddress ?? "unknown"}`, limit, 60_000);
    if (result.allowed) return next();
    const message = `Too many requests from this address; try again in ${result.retryAfterSeconds} seconds`;
    res.setHeader("Retry-After", String(result.retryAfterSeconds));
    res.status(429).json(name === "xrpc" ? { error: "RateLimitExceeded", message } : { error: "temporarily_unavailable", error_description: message });
  };
}

/** A request the app has not answered in time gets 503 instead of hanging. */
export function responseTimeout(config: Config) {
  return (req: Request, res: Response, next: NextFunction) => {
    const timer = setTimeout(() => {
      if (res.headersSent) return;
      res.setHeader("Retry-After", "5");
      const message = "The server took too long to answer";
      res.status(503).json(req.path.startsWith("/xrpc/") ? { error: "InternalServerError", message } : { error: "temporarily_unavailable", error_description: message });
    }, config.requestTimeoutMs);
    res.on("close", () => clearTimeout(timer));
    next();
  };
}

/** The client address as the app sees it: set by us only, never taken from the request. */
export function clientAddressHeader(req: Request, _res: Response, next: NextFunction) {
  req.headers["x-atrium-client-ip"] = req.ip ?? req.socket.remoteAddress ?? "";
  next();
}

export function requestLog(req: Request, res: Response, next: NextFunction) {
  const started = process.hrtime.bigint();
  res.on("finish", () => {
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    console.log(`${req.method} ${req.path} ${res.statusCode} ${ms.toFixed(1)}ms`);
  });
  next();
}

