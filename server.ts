import { randomBytes } from "node:crypto";
import type { Server } from "node:http";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createRequestHandler } from "@remix-run/express";
import type { ServerBuild } from "@remix-run/node";
import type { ApiRequest } from "./app/.server/http/api-request.ts";
import compression from "compression";
import express, { type NextFunction, type Request, type Response } from "express";
import { ConfigError, loadConfig, unsafeConfigWarnings, type Config } from "./app/.server/config.ts";
import { openSqlite } from "./app/.server/db/index.ts";
import { migrateDatabase } from "./app/.server/db/migrate.ts";
import { RateLimiter } from "./app/.server/security/rate-limiter.ts";

/**
 * The Express entry: security headers, CORS, body limits, request logging
 * and trust-proxy live here, in one visible place; everything else is the
 * Remix app (app/).
 */

const here = path.dirname(fileURLToPath(import.meta.url));
const MAX_BODY_BYTES = 1024 * 1024;

/** DESIGN §1: endpoints browser-based clients call directly get CORS; the screens do not. */
function isCorsPath(pathname: string): boolean {
  return (
    pathname.startsWith("/.well-known/") ||
    pathname.startsWith("/xrpc/") ||
    ["/oauth/par", "/oauth/token", "/oauth/revoke", "/oauth/userinfo", "/oauth/jwks"].includes(pathname)
  );
}

function cors(req: Request, res: Response, next: NextFunction) {
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

function securityHeaders(dev: boolean) {
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
function bodyLimit(config: Config) {
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
function drainUnreadBody(req: Request, res: Response, next: NextFunction) {
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
function expressErrors(error: Error & { status?: number; statusCode?: number }, req: Request, res: Response, next: NextFunction) {
  if (res.headersSent) return next(error);
  const status = error.status ?? error.statusCode ?? 500;
  const message = status < 500 ? "The request could not be understood" : "The server could not handle this request";
  if (status >= 500) console.error("Unhandled server error:", error);
  if (req.path.startsWith("/xrpc/")) res.status(status).json({ error: status < 500 ? "InvalidRequest" : "InternalServerError", message });
  else if (isCorsPath(req.path) || req.path.startsWith("/oauth/")) res.status(status).json({ error: status < 500 ? "invalid_request" : "server_error", error_description: message });
  else res.status(status).type("html").send(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Error ${status}</title></head><body><main><h1>${message}</h1><p><a href="/">Go to the start page</a></p></main></body></html>`);
}

/** The API dispatcher the server build exports (app/entry.server.tsx → app/.server/http/api-routes.ts). */
type ApiHandler = (path: string, request: ApiRequest) => Promise<globalThis.Response> | undefined;

/** Node's request seen through the small interface the JSON endpoints read: no Fetch objects per request. */
function nodeApiRequest(req: Request, issuer: string): ApiRequest {
  // Buffered from the start: the body-limit counter already made the stream flow, so a listener
  // attached later could miss chunks. Bodies here are bounded by that limit.
  const body = new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
    req.on("close", () => reject(new Error("request closed before its body ended")));
  });
  body.catch(() => {});
  const readBody = () => body;
  const header = (name: string) => {
    const value = req.headers[name.toLowerCase()];
    return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
  };
  return {
    method: req.method,
    url: issuer + req.originalUrl,
    headers: { get: header, has: (name) => header(name) !== null },
    text: async () => (await readBody()).toString("utf8"),
    arrayBuffer: async () => {
      const bytes = await readBody();
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    },
  };
}

/** Serves the JSON endpoints straight from Express (the hot paths); screens go on to Remix. */
function apiEndpoints(config: Config, handler: () => Promise<ApiHandler>) {
  return async (req: Request, res: Response, next: NextFunction) => {
    if (!isCorsPath(req.path)) return next();
    // Before any await: the body must be listened to in the tick the request arrived in.
    const request = nodeApiRequest(req, config.issuer);
    try {
      const pending = (await handler())(req.path, request);
      if (!pending) return next();
      const response = await pending;
      res.status(response.status);
      response.headers.forEach((value, name) => res.setHeader(name, value));
      res.end(response.body ? Buffer.from(await response.arrayBuffer()) : undefined);
    } catch (error) {
      next(error);
    }
  };
}

/**
 * Requests are handled as addressed to the issuer, whatever Host a reverse
 * proxy passed on: URLs the app builds (DPoP htu, redirects) use the public
 * origin, and Remix's own origin check compares against it.
 */
function canonicalHost(config: Config) {
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
function screenOriginCheck(config: Config) {
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
function requestLimits(config: Config, limiter: RateLimiter) {
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
function responseTimeout(config: Config) {
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
function clientAddressHeader(req: Request, _res: Response, next: NextFunction) {
  req.headers["x-atrium-client-ip"] = req.ip ?? req.socket.remoteAddress ?? "";
  next();
}

function requestLog(req: Request, res: Response, next: NextFunction) {
  const started = process.hrtime.bigint();
  res.on("finish", () => {
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    console.log(`${req.method} ${req.path} ${res.statusCode} ${ms.toFixed(1)}ms`);
  });
  next();
}

async function loadBuild(dev: boolean) {
  if (!dev) {
    const buildPath = path.join(here, "build", "server", "index.js");
    const build = (await import(pathToFileURL(buildPath).href)) as ServerBuild;
    return { build: async () => build, vite: undefined };
  }
  const { createServer } = await import("vite");
  const vite = await createServer({ server: { middlewareMode: true } });
  return { build: () => vite.ssrLoadModule("virtual:remix/server-build") as Promise<ServerBuild>, vite };
}

export async function startServer(config: Config, options: { dev: boolean }): Promise<Server> {
  for (const warning of unsafeConfigWarnings(config)) console.warn(`\n  WARNING: ${warning}\n`);
  const { applied } = migrateDatabase(config.databasePath);
  if (applied.length) console.log(`Applied database migrations: ${applied.join(", ")}`);

  const limiter = new RateLimiter(openSqlite(config.databasePath));
  const { build, vite } = await loadBuild(options.dev);
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", config.trustProxy);
  app.use(drainUnreadBody);
  app.use(clientAddressHeader);
  app.use(canonicalHost(config));
  if (config.logRequests) app.use(requestLog);
  app.use(securityHeaders(options.dev));
  app.use(cors);
  app.use(screenOriginCheck(config));
  app.use(requestLimits(config, limiter));
  app.use(responseTimeout(config));
  app.use(bodyLimit(config));
  // Pages and assets are compressed; small API JSON is not (a zlib stream per answer costs more than it saves).
  const compress = compression();
  app.use((req, res, next) => (isCorsPath(req.path) ? next() : compress(req, res, next)));
  if (vite) {
    app.use(vite.middlewares);
  } else {
    app.use("/assets", express.static(path.join(here, "build", "client", "assets"), { immutable: true, maxAge: "1y" }));
    // Other public files (favicon and the like), looked up only for GETs that are not API calls.
    const publicFiles = express.static(path.join(here, "build", "client"), { maxAge: "1h", index: false });
    app.use((req, res, next) => (isCorsPath(req.path) ? next() : publicFiles(req, res, next)));
  }
  app.use(apiEndpoints(config, async () => ((await build()).entry.module as unknown as { handleApiRequest: ApiHandler }).handleApiRequest));
  app.all(
    "*",
    createRequestHandler({
      build,
      getLoadContext: (_req, res) => ({ cspNonce: res.locals.cspNonce as string }),
    }),
  );
  app.use(expressErrors);

  return new Promise((resolve) => {
    const server = app.listen(config.port, config.host, () => resolve(server));
    // Slow clients cannot hold a connection open forever (slowloris).
    server.headersTimeout = 15_000;
    server.requestTimeout = config.requestTimeoutMs;
    server.keepAliveTimeout = 5_000;
  });
}

function installShutdown(server: Server) {
  const stop = (signal: string) => {
    console.log(`${signal} received: finishing in-flight requests, then exiting`);
    server.close(() => process.exit(0));
    server.closeIdleConnections();
    setTimeout(() => process.exit(0), 10_000).unref();
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

async function main() {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(1);
    }
    throw error;
  }
  const dev = process.argv.includes("--dev");
  const server = await startServer(config, { dev });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  installShutdown(server);
  // One JSON line first (tests read it), then the human line.
  console.log(JSON.stringify({ event: "listening", port, issuer: config.issuer }));
  console.log(`Atrium is serving ${config.issuer} (listening on ${config.host}:${port})`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  await main();
}
