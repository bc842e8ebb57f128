import type { Readable } from "node:stream";
import type { ApiRequest } from "../http/api-request.ts";
import type { ApiResponse } from "../http/api-response.ts";
import { createServiceJwt } from "../accounts/service-auth.ts";
import type { ResourceCaller } from "../resource/resource-auth.ts";
import type { Services } from "../services.ts";
import { MINUTE } from "../util/time.ts";
import type { Upstream, UpstreamAnswer } from "./upstream-client.ts";
import { invalidRequest, XrpcError } from "./xrpc-error.ts";

/**
 * One proxied call (docs/decisions/0048), shared by the plain proxy (proxy.ts), getFeed (feed-generator.ts) and the
 * read-after-write reads (read-after-write/): the service token, the headers passed each way as the reference's
 * proxy (its pipethrough.ts) passes them, and upstream failures.
 */

/** The call's path upstream: the method in its canonical spelling, the query as sent. */
export function upstreamPath(nsid: string, request: ApiRequest): string {
  const query = request.url.indexOf("?");
  return `/xrpc/${nsid}${query === -1 ? "" : request.url.slice(query)}`;
}

export type UpstreamCallOptions = {
  /** The token's audience (a bare DID) and method. */
  aud: string;
  lxm: string;
  path: string;
  /** The encoding asked of the upstream; the client's by default (passed on as it comes). */
  acceptEncoding?: string;
};

/** Request headers passed on, as the reference's proxy passes them; the body's own with a body. */
const FORWARDED_REQUEST_HEADERS = ["accept-language", "atproto-accept-labelers", "x-bsky-topics"];
const FORWARDED_BODY_HEADERS = ["content-type", "content-encoding"];

/** Signs the caller's service token and sends the call; the answer as it comes. */
export async function callUpstream(services: Services, caller: ResourceCaller, request: ApiRequest, upstream: Upstream, options: UpstreamCallOptions): Promise<UpstreamAnswer> {
  const method = request.method as "GET" | "HEAD" | "POST";
  const body = method === "POST" ? new Uint8Array(await request.arrayBuffer()) : undefined;
  const headers: Record<string, string> = {
    "accept-encoding": options.acceptEncoding ?? (request.headers.get("accept-encoding") || "identity"),
    authorization: `Bearer ${await serviceToken(services, caller.did, options.aud, options.lxm)}`,
  };
  for (const name of FORWARDED_REQUEST_HEADERS) copyHeader(request, headers, name);
  if (body) {
    for (const name of FORWARDED_BODY_HEADERS) copyHeader(request, headers, name);
    headers["content-length"] = String(body.byteLength);
  }
  return services.upstreams.call(upstream, { method, path: options.path, headers, body });
}

/** A service token of the caller's account key for `aud` and `lxm`, valid for a minute. */
export async function serviceToken(services: Services, did: string, aud: string, lxm: string): Promise<string> {
  const signingKey = await services.proxyKeys.of(did);
  if (!signingKey) throw invalidRequest("The account has no signing key");
  const now = services.now();
  return createServiceJwt({ iss: did, aud, lxm, expiresAt: now + MINUTE, signingKey, now });
}

function copyHeader(request: ApiRequest, headers: Record<string, string>, name: string): void {
  const value = request.headers.get(name);
  if (value) headers[name] = value;
}

/** Response headers passed on, as the reference's proxy passes them. */
const FORWARDED_CONTENT_HEADERS: ReadonlyArray<[string, string]> = [
  // Also spares a chunked answer's last write: a syscall, which costs much on some hosts (bench/README.md).
  ["content-length", "Content-Length"],
  ["content-type", "Content-Type"],
  ["content-language", "Content-Language"],
  ["content-encoding", "Content-Encoding"],
];
const FORWARDED_RESPONSE_HEADERS: ReadonlyArray<[string, string]> = [
  ["atproto-repo-rev", "atproto-repo-rev"],
  ["atproto-content-labelers", "atproto-content-labelers"],
  ["retry-after", "Retry-After"],
];

/**
 * The upstream's answer, passed on as it streams in (timelines and feeds can be large; the upstream client caps
 * them). An upstream failure (5xx) is 502 UpstreamFailure, with its Retry-After.
 */
export function passedOn(upstream: Upstream, answer: UpstreamAnswer): ApiResponse {
  if (answer.status >= 500) throw upstreamFailure(upstream, answer);
  return { status: answer.status, headers: forwardedHeaders(answer, true), body: answer.body };
}

export function forwardedHeaders(answer: UpstreamAnswer, withContent: boolean): Record<string, string> {
  const headers: Record<string, string> = {};
  const copy = ([from, to]: [string, string]) => {
    const value = answer.headers[from];
    if (value !== undefined) headers[to] = Array.isArray(value) ? value.join(", ") : value;
  };
  if (withContent) FORWARDED_CONTENT_HEADERS.forEach(copy);
  FORWARDED_RESPONSE_HEADERS.forEach(copy);
  return headers;
}

export function upstreamFailure(upstream: Upstream, answer: UpstreamAnswer): XrpcError {
  discard(answer.body);
  // Retry-After in seconds is passed on (an HTTP date is left out: the error model speaks seconds).
  const retryAfter = Number(answer.headers["retry-after"] ?? NaN);
  return new XrpcError(502, "UpstreamFailure", `The service ${upstream.service} failed (HTTP ${answer.status})`, {
    retryAfterSeconds: Number.isSafeInteger(retryAfter) && retryAfter >= 0 ? retryAfter : undefined,
  });
}

/** Drops an answer's body without reading it. */
export function discard(body: Readable): void {
  body.on("error", () => {});
  body.destroy();
}
