import { randomBytes } from "node:crypto";
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import type { NextFunction, Request, Response } from "express";
import type { Config } from "../app/.server/config.ts";
import { limitBucketOf, type TrustedProxies } from "../app/.server/http/forwarded-address.ts";
import type { Metrics } from "../app/.server/observability/metrics.ts";
import type { ErrorReporter } from "../app/.server/observability/report-error.ts";
import type { RateLimitResult, RequestLimiter } from "../app/.server/security/request-limiter.ts";
import { MAX_BODY_BYTES } from "../app/.server/http/limits.ts";
import { translatorFor, type Translate } from "../app/.server/i18n/translate.ts";
import { entryErrorPage, entryLanguage } from "./error-page.ts";
import { clientAddress, drainRest, isBodyDrainable, requestIdOf, type RequestRecorder } from "./http-common.ts";
import { armResponseTimer, TOO_LATE } from "./response-timeout.ts";
import { firstWithControlCharacter } from "../app/.server/util/control-characters.ts";
import { contentSecurityPolicy, HARDENING_HEADERS } from "./security-headers.ts";

/**
 * The Express middleware of the screens (server.ts; the JSON endpoints are
 * served ahead of Express by server/api-server.ts): security headers with the
 * CSP nonce, body limits and draining, timeouts, origin checks for form
 * posts, and Express's own errors as readable pages.
 */

/**
 * Writes one of the entry's own pages (server/error-page.ts) in the person's language, unless an answer was sent
 * while the language was being chosen.
 */
async function sendEntryPage(
  config: Pick<Config, "publicUrl">,
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  words: (t: Translate) => { title: string; message: string },
  headers: OutgoingHttpHeaders = {},
): Promise<void> {
  const language = await entryLanguage(config, req.url, req.headers);
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { ...headers, "Content-Type": "text/html; charset=utf-8", "Content-Language": language });
  res.end(entryErrorPage(language, words));
}

/** The hardening headers of every answer (server/security-headers.ts), and a CSP with a fresh nonce for the pages. */
export function securityHeaders(dev: boolean) {
  return (_req: Request, res: Response, next: NextFunction) => {
    for (const [name, value] of Object.entries(HARDENING_HEADERS)) res.setHeader(name, value);
    const nonce = randomBytes(16).toString("base64");
    res.locals.cspNonce = nonce;
    if (!dev) res.setHeader("Content-Security-Policy", contentSecurityPolicy(nonce));
    next();
  };
}

/**
 * Refuses oversized bodies before any route reads them (413, a readable
 * page: only the screens come through Express).
 */
export function bodyLimit(config: Pick<Config, "publicUrl">) {
  return (req: Request, res: Response, next: NextFunction) => limitBody(config, req, res, next);
}

function limitBody(config: Pick<Config, "publicUrl">, req: Request, res: Response, next: NextFunction) {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > MAX_BODY_BYTES) {
    void sendEntryPage(config, req, res, 413, (t) => ({ title: t("common:entry.tooMuchData.title"), message: t("common:entry.tooMuchData.message") }));
    return;
  }
  // A body without Content-Length is cut off once far beyond the limit, so the connection cannot be used to stream forever.
  let seen = 0;
  req.on("data", (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > 2 * MAX_BODY_BYTES) req.destroy(new Error("request body too large"));
  });
  next();
}

/**
 * A response sent before its request body was read (a refusal) would leave
 * the rest of the body in the connection and stall the next request on it:
 * the unread rest is drained (http-common.ts), or, when it is declared too
 * large to drain, the response closes the connection.
 */
export function drainUnreadBody(req: Request, res: Response, next: NextFunction) {
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => Response;
  res.writeHead = ((...args: unknown[]) => {
    if (!req.complete && !isBodyDrainable(req)) res.setHeader("Connection", "close");
    return writeHead(...args);
  }) as typeof res.writeHead;
  res.on("finish", () => {
    drainRest(req);
  });
  next();
}

/** Errors Express raises itself (e.g. an undecodable path), as a readable page; unexpected ones go to `report`. */
export function expressErrors(config: Pick<Config, "publicUrl">, report: ErrorReporter) {
  return (error: Error & { status?: number; statusCode?: number }, req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(error);
    const status = error.status ?? error.statusCode ?? 500;
    if (status >= 500) report("Unhandled server error", error, res.locals.requestId as string | undefined);
    void sendEntryPage(config, req, res, status, (t) => ({
      title: t("common:entry.status.title", { status }),
      message: status < 500 ? t("common:entry.status.badRequest") : t("common:entry.status.serverError"),
    }));
  };
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
 * docs/architecture.md, "Browser security": a state-changing post to a screen must come from our own
 * origin. Refused here with a readable page (Remix would otherwise abort
 * with a bare 500).
 */
export function screenOriginCheck(config: Config) {
  return (req: Request, res: Response, next: NextFunction) => {
    const origin = req.headers.origin;
    if (req.method === "GET" || req.method === "HEAD" || origin === undefined || origin === config.issuer) return next();
    void sendEntryPage(config, req, res, 403, (t) => ({ title: t("common:entry.notFromHere.title"), message: t("common:entry.notFromHere.message") }));
  };
}

/** A request the app has not answered in time gets 503 and a page instead of hanging (server/response-timeout.ts). */
export function responseTimeout(config: Config) {
  return (_req: Request, res: Response, next: NextFunction) => {
    const timer = armResponseTimer(config.requestTimeoutMs, res, answerScreenTooLate, config);
    res.on("close", () => clearTimeout(timer));
    next();
  };
}

function answerScreenTooLate(res: ServerResponse, config: Pick<Config, "publicUrl">): void {
  void sendEntryPage(config, res.req, res, 503, (t) => ({ title: t("common:entry.tooLate.title"), message: t("common:entry.tooLate.message") }), {
    "Retry-After": TOO_LATE.retryAfterSeconds,
  });
}

/** The client address as the app sees it: set by us only, never taken from the request. */
export function clientAddressHeader(trustProxy: TrustedProxies) {
  return (req: Request, _res: Response, next: NextFunction) => {
    req.headers["x-atrium-client-ip"] = clientAddress(req, trustProxy);
    next();
  };
}

/**
 * The screens' callers that read JSON: the passkey ceremonies
 * (app/components/passkey/*) show a refusal's `error_description`.
 */
const JSON_SCREEN_PATHS = new Set(["/oauth/passkey-auth", "/account/passkey-auth", "/account/passkey-register"]);

/**
 * Per-address limit on the screens, like the API entry's limits: every
 * request Express hands to Remix counts, since anonymous ones write too (a
 * passkey GET stores a WebAuthn challenge); static files are served before
 * this and do not. Counted by the same RequestLimiter as the API entry, so
 * shared by every process on the database (docs/decisions/0005), keyed by
 * the client address of docs/decisions/0006. Over the limit: 429 with
 * Retry-After, as JSON for the passkey endpoints and as a page for the rest.
 */
export function screenRequestLimit(config: Config, limiter: RequestLimiter, metrics: Pick<Metrics, "rateLimited">) {
  const answer = (req: Request, res: Response, next: NextFunction, result: RateLimitResult) => {
    if (result.allowed) return next();
    metrics.rateLimited("screen");
    const count = result.retryAfterSeconds;
    const headers = { "Retry-After": String(count), "Cache-Control": "no-store" };
    if (JSON_SCREEN_PATHS.has(req.path.replace(/\/$/, ""))) {
      void entryLanguage(config, req.url, req.headers).then((language) => {
        if (res.headersSent || res.destroyed) return;
        res.status(429).set(headers).json({ error: "temporarily_unavailable", error_description: translatorFor(language)("errors:json.tooManyRequests", { count }) });
      });
      return;
    }
    void sendEntryPage(config, req, res, 429, (t) => ({ title: t("common:entry.tooManyRequests.title"), message: t("common:entry.tooManyRequests.message", { count }) }), headers);
  };
  return (req: Request, res: Response, next: NextFunction) => {
    const key = `requests:screen:${limitBucketOf(clientAddress(req, config.trustProxy))}`;
    // Counted in memory while the address is well below its limit; otherwise the database decides.
    const counted = limiter.countInMemory(key, config.rateLimits.screenPerMinute);
    if (counted) return answer(req, res, next, counted);
    // Nothing listens to the body yet (server.ts puts bodyLimit after this), so it waits, unread, while the
    // database decides.
    limiter.decide(key, config.rateLimits.screenPerMinute, 60_000).then((settled) => answer(req, res, next, settled), next);
  };
}

/**
 * A link to a screen whose query holds a control character is refused here, before any screen looks up what it names
 * (a request_uri, a client_id, an app to revoke, a reset code): none of those has one, and a NUL would reach the
 * database (app/.server/util/control-characters.ts). A page, or JSON for the passkey endpoints, as the limit above answers.
 */
export function screenQueryCheck(config: Pick<Config, "publicUrl">) {
  return (req: Request, res: Response, next: NextFunction) => {
    const query = req.url.indexOf("?");
    if (query === -1 || firstWithControlCharacter(new URLSearchParams(req.url.slice(query + 1))) === undefined) return next();
    const headers = { "Cache-Control": "no-store" };
    if (JSON_SCREEN_PATHS.has(req.path.replace(/\/$/, ""))) {
      void entryLanguage(config, req.url, req.headers).then((language) => {
        if (res.headersSent || res.destroyed) return;
        res.status(400).set(headers).json({ error: "invalid_request", error_description: translatorFor(language)("common:entry.controlCharacters.message") });
      });
      return;
    }
    void sendEntryPage(config, req, res, 400, (t) => ({ title: t("common:entry.controlCharacters.title"), message: t("common:entry.controlCharacters.message") }), headers);
  };
}

/**
 * The request id (X-Request-Id, sent back and handed to Remix in the request
 * headers) and, once the answer is sent, the request's log line and metrics
 * (docs/decisions/0014). The metrics label is `res.locals.route`: the Remix
 * route id for what reaches Remix (`screenRoute`), "static" for the public
 * files, "other" for what the entry refused before either.
 */
export function requestRecord(trustProxy: TrustedProxies, recorder: RequestRecorder) {
  return (req: Request, res: Response, next: NextFunction) => {
    const started = performance.now();
    const requestId = requestIdOf(req, trustProxy);
    const path = req.path;
    req.headers["x-request-id"] = requestId;
    res.locals.requestId = requestId;
    res.setHeader("X-Request-Id", requestId);
    res.on("finish", () => recorder.served(req, requestId, path, (res.locals.route as string | undefined) ?? "other", res.statusCode, started));
    next();
  };
}

/** Labels what Remix answers with the id of the route that serves the path (bounded: one of the app's routes). */
export function screenRoute(routeOf: (path: string) => string) {
  return (req: Request, res: Response, next: NextFunction) => {
    res.locals.route = routeOf(req.path);
    next();
  };
}

/** For express.static's `setHeaders`: what it serves is labelled "static". */
export function labelStatic(res: ServerResponse): void {
  (res as Response).locals.route = "static";
}

