import net from "node:net";
import { fetchDocumentBytes } from "../oauth/client/safe-fetch.ts";
import { DAY, HOUR, SECOND } from "../util/time.ts";
import { didDocumentSchema, type DidDocument } from "./did-document.ts";

/**
 * The one resolver of other parties' DID documents (atproto DIDs: https://atproto.com/specs/did): did:plc from the
 * PLC directory (`<directory>/<did>`), did:web from `https://<host>/.well-known/did.json` (hostname-level did:web
 * only, as atproto allows). Service proxying (xrpc/proxy.ts) and the network permission-set resolver use it.
 *
 * did:web documents come through the hardened fetch of client metadata (oauth/client/safe-fetch.ts: https only, no
 * redirects, exactly 200 and JSON, 64 KiB, 10 s, no loopback or private addresses) unless `allowPrivate`
 * (ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS, development and tests), which allows http for loopback hosts and private
 * addresses. The PLC directory is the operator's own setting (https, or http on loopback: config.ts), fetched with
 * the same caps but without the address rule.
 *
 * Answers are kept in memory within fixed bounds (docs/decisions/0048): at most `maxEntries` documents and
 * `maxBytes` of them as fetched, the oldest fetched dropped first. A document younger than `freshForMs` (an hour,
 * the reference PDS's stale age) is served as it is; an older one is fetched again, and while that fails the old
 * copy is served up to `serveStaleForMs` (a day, the reference's maximum age). A DID that does not resolve is not
 * remembered. Concurrent resolutions of one DID share one fetch.
 */

export class DidResolutionError extends Error {
  constructor(
    readonly did: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "DidResolutionError";
  }
}

export type DidResolverOptions = {
  /** ATRIUM_PLC_DIRECTORY_URL, without a trailing slash. */
  plcDirectoryUrl: string;
  /** Development and tests only: did:web over http for loopback hosts, and private addresses. */
  allowPrivate: boolean;
  /** The clock, epoch milliseconds. */
  now?: () => number;
  /** Per fetch; 10 s by default. */
  timeoutMs?: number;
  maxEntries?: number;
  maxBytes?: number;
  freshForMs?: number;
  serveStaleForMs?: number;
  /** Told when a cached document is served because fetching it again failed. */
  onStaleServed?: (did: string, error: DidResolutionError) => void;
};

export const DID_CACHE_DEFAULTS = { maxEntries: 2000, maxBytes: 8 * 1024 * 1024, freshForMs: HOUR, serveStaleForMs: DAY };

const MAX_DID_DOCUMENT_BYTES = 64 * 1024;
const MAX_DID_LENGTH = 2048;
const DEFAULT_TIMEOUT_MS = 10 * SECOND;
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

type Entry = { document: DidDocument; fetchedAt: number; bytes: number };

export class DidResolver {
  private readonly plcDirectoryUrl: string;
  private readonly allowPrivate: boolean;
  private readonly now: () => number;
  private readonly timeoutMs: number;
  private readonly bounds: typeof DID_CACHE_DEFAULTS;
  private readonly onStaleServed: (did: string, error: DidResolutionError) => void;
  /** In fetch order: the first entry is the oldest fetched. */
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  private readonly inFlight = new Map<string, Promise<DidDocument>>();

  constructor(options: DidResolverOptions) {
    this.plcDirectoryUrl = options.plcDirectoryUrl.replace(/\/+$/, "");
    this.allowPrivate = options.allowPrivate;
    this.now = options.now ?? Date.now;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.bounds = {
      maxEntries: options.maxEntries ?? DID_CACHE_DEFAULTS.maxEntries,
      maxBytes: options.maxBytes ?? DID_CACHE_DEFAULTS.maxBytes,
      freshForMs: options.freshForMs ?? DID_CACHE_DEFAULTS.freshForMs,
      serveStaleForMs: options.serveStaleForMs ?? DID_CACHE_DEFAULTS.serveStaleForMs,
    };
    this.onStaleServed = options.onStaleServed ?? (() => {});
  }

  /** What the cache holds now: documents, and their bytes as fetched. */
  cached(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  /**
   * The DID's document; DidResolutionError when it cannot be had (unsupported, not found, unreachable, malformed).
   * `fresh`: fetched again even when the cached copy is young (a signature that did not verify against the cached key
   * may be under a key the DID has just rotated to, as the reference's service-auth check retries).
   */
  resolve(did: string, options: { fresh?: boolean } = {}): Promise<DidDocument> {
    const entry = this.entries.get(did);
    if (entry && !options.fresh && this.now() - entry.fetchedAt < this.bounds.freshForMs) return Promise.resolve(entry.document);
    let pending = this.inFlight.get(did);
    if (!pending) {
      pending = this.refresh(did, entry).finally(() => this.inFlight.delete(did));
      this.inFlight.set(did, pending);
    }
    return pending;
  }

  private async refresh(did: string, entry: Entry | undefined): Promise<DidDocument> {
    try {
      const fetched = await this.fetch(did);
      this.remember(did, { ...fetched, fetchedAt: this.now() });
      return fetched.document;
    } catch (thrown) {
      const error = thrown instanceof DidResolutionError ? thrown : new DidResolutionError(did, `Resolving ${did} failed: ${messageOf(thrown)}`, { cause: thrown });
      if (entry && this.now() - entry.fetchedAt < this.bounds.serveStaleForMs) {
        this.onStaleServed(did, error);
        return entry.document;
      }
      if (entry) this.forget(did);
      throw error;
    }
  }

  private async fetch(did: string): Promise<{ document: DidDocument; bytes: number }> {
    const url = this.documentUrl(did);
    let raw: Uint8Array;
    try {
      raw = await fetchDocumentBytes(url, {
        // The PLC directory is the operator's own setting; a did:web host is anyone's.
        allowPrivate: this.allowPrivate || did.startsWith("did:plc:"),
        accept: "application/did+ld+json, application/json",
        contentTypePattern: JSON_TYPE,
        contentTypeName: "JSON",
        maxBytes: MAX_DID_DOCUMENT_BYTES,
        timeoutMs: this.timeoutMs,
      });
    } catch (error) {
      throw new DidResolutionError(did, `Resolving ${did} failed: ${messageOf(error)}`, { cause: error });
    }
    let json: unknown;
    try {
      json = JSON.parse(Buffer.from(raw).toString("utf8"));
    } catch (error) {
      throw new DidResolutionError(did, `The DID document of ${did} from ${url} is not JSON`, { cause: error });
    }
    const parsed = didDocumentSchema.safeParse(json);
    if (!parsed.success) throw new DidResolutionError(did, `The DID document of ${did} from ${url} is malformed`);
    if (parsed.data.id !== did) throw new DidResolutionError(did, `The DID document from ${url} is for ${parsed.data.id}, not ${did}`);
    return { document: parsed.data, bytes: raw.byteLength };
  }

  private documentUrl(did: string): string {
    if (did.length <= MAX_DID_LENGTH && /^did:plc:[a-z2-7]{24}$/.test(did)) return `${this.plcDirectoryUrl}/${did}`;
    const host = did.length <= MAX_DID_LENGTH ? didWebHost(did) : undefined;
    if (host === undefined) throw new DidResolutionError(did, `${truncated(did)} is not a did:plc or hostname-level did:web DID: it cannot be resolved`);
    const hostname = host.replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
    const local = hostname === "localhost" || hostname.endsWith(".localhost") || net.isIP(hostname) !== 0;
    const scheme = this.allowPrivate && local ? "http" : "https";
    return `${scheme}://${host}/.well-known/did.json`;
  }

  private remember(did: string, entry: Entry): void {
    this.forget(did);
    this.entries.set(did, entry);
    this.bytes += entry.bytes;
    for (const [oldest] of this.entries) {
      if (this.entries.size <= this.bounds.maxEntries && this.bytes <= this.bounds.maxBytes) break;
      this.forget(oldest);
    }
  }

  private forget(did: string): void {
    const entry = this.entries.get(did);
    if (!entry) return;
    this.entries.delete(did);
    this.bytes -= entry.bytes;
  }
}

/** A DID this resolver can resolve: did:plc, or a hostname-level did:web. */
export function isResolvableDid(did: string): boolean {
  if (did.length > MAX_DID_LENGTH) return false;
  return /^did:plc:[a-z2-7]{24}$/.test(did) || didWebHost(did) !== undefined;
}

/** The host (with port) of a hostname-level did:web, or undefined. `did:web:127.0.0.1%3A8080` → `127.0.0.1:8080`. */
export function didWebHost(did: string): string | undefined {
  const match = /^did:web:([a-zA-Z0-9.-]+(?:%3[aA]\d{1,5})?)$/.exec(did);
  if (!match) return undefined;
  const host = match[1]!.replace(/%3a/i, ":");
  let parsed: URL;
  try {
    parsed = new URL(`https://${host}/`);
  } catch {
    return undefined;
  }
  const hostname = host.replace(/:\d+$/, "").toLowerCase();
  if (parsed.hostname !== hostname || hostname.startsWith(".") || hostname.endsWith(".") || hostname.includes("..")) return undefined;
  return host;
}

function truncated(text: string): string {
  return JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
