import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import { Agent, type Dispatcher } from "undici";
import { publicOnlyLookup, refusedTarget } from "../oauth/client/safe-fetch.ts";
import { SECOND } from "../util/time.ts";
import { XrpcError } from "./xrpc-error.ts";

/**
 * The HTTP side of service proxying (docs/decisions/0048): one call to an upstream service, its answer passed on as it
 * streams in. An upstream named by a DID document is anyone's, so it is reached only under the hardened fetch's rules
 * (oauth/client/safe-fetch.ts: https, public addresses only, checked on the written host and again on every address
 * its name resolves to) unless `allowPrivate` (ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS); one the operator set
 * (ATRIUM_PROXY_SERVICES, ATRIUM_APPVIEW_URL, ATRIUM_REPORT_SERVICE_URL) is reached as set. Limits as the reference
 * PDS's proxy agent has them: 10 s for the answer's head, 30 s between two parts of its body, and an answer larger
 * than `maxResponseBytes` is cut off.
 */

/** Where a service's calls go: its base URL, and whether the operator set it (else a DID document named it). */
export type Upstream = { service: string; url: URL; operatorSet: boolean };

export type UpstreamRequest = {
  method: "GET" | "HEAD" | "POST";
  /** Path and query, e.g. `/xrpc/app.bsky.feed.getTimeline?limit=5`. */
  path: string;
  headers: Record<string, string>;
  body?: Uint8Array;
};

export type UpstreamAnswer = { status: number; headers: IncomingHttpHeaders; body: Readable };

export type UpstreamClientOptions = {
  allowPrivate: boolean;
  maxResponseBytes: number;
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
};

const HEADERS_TIMEOUT_MS = 10 * SECOND;
const BODY_TIMEOUT_MS = 30 * SECOND;
const KEEP_ALIVE_MS = 4 * SECOND;

export class UpstreamClient {
  readonly maxResponseBytes: number;
  private readonly allowPrivate: boolean;
  /** For the operator's own upstreams. */
  private readonly trusted: Dispatcher;
  /** For upstreams a DID document named: connections only to public unicast addresses. */
  private readonly hardened: Dispatcher;

  constructor(options: UpstreamClientOptions) {
    this.maxResponseBytes = options.maxResponseBytes;
    this.allowPrivate = options.allowPrivate;
    // undici counts the body and ends the connection past maxResponseSize (the answer's stream then fails).
    const limits = {
      headersTimeout: options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS,
      bodyTimeout: options.bodyTimeoutMs ?? BODY_TIMEOUT_MS,
      keepAliveTimeout: KEEP_ALIVE_MS,
      maxResponseSize: options.maxResponseBytes,
    };
    this.trusted = new Agent(limits);
    this.hardened = options.allowPrivate ? this.trusted : new Agent({ ...limits, connect: { lookup: publicOnlyLookup as never } });
  }

  /**
   * Why a DID document's endpoint may not be called, or undefined: an http(s) origin-rooted URL without credentials,
   * under the hardened fetch's rules unless `allowPrivate`.
   */
  refusedEndpoint(url: URL): string | undefined {
    if (url.username || url.password) return "carries credentials";
    if (url.protocol !== "https:" && url.protocol !== "http:") return "is not an http(s) URL";
    return refusedTarget(url, this.allowPrivate);
  }

  /**
   * Sends the request; the answer's body is capped at maxResponseBytes (its stream fails past it). Unreachable,
   * refused, too slow, or announcing a larger body: 502 UpstreamFailure.
   */
  async call(upstream: Upstream, request: UpstreamRequest): Promise<UpstreamAnswer> {
    let answer: Dispatcher.ResponseData;
    try {
      answer = await (upstream.operatorSet ? this.trusted : this.hardened).request({
        origin: upstream.url.origin,
        path: joinedPath(upstream.url, request.path),
        method: request.method,
        headers: request.headers,
        body: request.body,
      });
    } catch (error) {
      throw new XrpcError(502, "UpstreamFailure", `The service ${upstream.service} could not be reached (${describe(error)})`);
    }
    const declared = Number(answer.headers["content-length"] ?? 0);
    if (declared > this.maxResponseBytes) {
      answer.body.destroy();
      throw new XrpcError(502, "UpstreamFailure", `The service ${upstream.service} answered more than ${this.maxResponseBytes} bytes`);
    }
    return { status: answer.statusCode, headers: answer.headers, body: answer.body };
  }
}

/** The request's path under the upstream's base path (a service may live below its origin). */
function joinedPath(base: URL, path: string): string {
  const prefix = base.pathname.replace(/\/+$/, "");
  return `${prefix}${path}`;
}

/** Reads a capped answer to the end (for the answers this server reads itself). */
export async function readAll(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string } } | undefined)?.cause;
  if (cause?.code === "ENOTPUBLIC" || (error as { code?: string } | undefined)?.code === "ENOTPUBLIC") return "its host resolves to a non-public address";
  if (error instanceof Error) return error.message;
  return String(error);
}
