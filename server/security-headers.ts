import type { HttpMethod } from "../app/.server/http/api-routes.ts";

/**
 * The one place that says which hardening headers every answer carries, the
 * JSON endpoints' (server/api-server.ts) and the screens' (server/middleware.ts).
 */

/** On every answer: no MIME sniffing, no framing, no Referer (the authorize URL carries a request_uri). */
export const HARDENING_HEADERS: Readonly<Record<string, string>> = {
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
};

/**
 * The JSON endpoints browser-based clients call from other origins: any origin, and the headers they must read
 * (X-Request-Id: to quote when reporting a problem; a refusal's Retry-After and the write budget's RateLimit-* fields,
 * which the reference PDS exposes too: docs/decisions/0045).
 */
export const CORS_HEADERS: Readonly<Record<string, string>> = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Expose-Headers": "DPoP-Nonce, WWW-Authenticate, X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, RateLimit-Policy",
};

/** The answer to a CORS preflight of an endpoint serving `methods`. */
export function preflightHeaders(methods: readonly HttpMethod[]): Record<string, string> {
  return {
    ...HARDENING_HEADERS,
    ...CORS_HEADERS,
    "Access-Control-Allow-Methods": [...methods, "OPTIONS"].join(", "),
    // With the headers service proxying passes on (docs/decisions/0048), so that a browser app may send them.
    "Access-Control-Allow-Headers": "Content-Type, DPoP, Authorization, atproto-proxy, atproto-accept-labelers, x-bsky-topics",
    "Access-Control-Max-Age": "600",
  };
}

/** The screens' Content-Security-Policy: scripts only from here with this response's nonce, never framed. */
export function contentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}'`,
    "style-src 'self'",
    "img-src 'self' https: data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}
