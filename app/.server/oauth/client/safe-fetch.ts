import dns from "node:dns";
import net from "node:net";
import { Agent, fetch } from "undici";
import { InvalidClientMetadataError } from "../errors/oauth-error.ts";
import { SECOND } from "../../util/time.ts";

/**
 * The hardened fetch for documents named by clients (docs/architecture.md, "Client metadata"): HTTPS
 * only, no redirects, exactly 200 with a JSON content type, a size cap, a
 * timeout, and DNS answers that are not public unicast refused, so that a
 * client_id cannot make this server reach into its own network.
 */

export type SafeFetchOptions = {
  /** Development only: allow http and loopback/private addresses. */
  allowPrivate: boolean;
  maxBytes?: number;
  timeoutMs?: number;
};

const DEFAULT_MAX_BYTES = 512 * 1024;
const DEFAULT_TIMEOUT_MS = 10 * SECOND;

const blocked = new net.BlockList();
for (const [prefix, bits] of [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16],
  ["172.16.0.0", 12], ["192.0.0.0", 24], ["192.0.2.0", 24], ["192.88.99.0", 24], ["192.168.0.0", 16],
  ["198.18.0.0", 15], ["198.51.100.0", 24], ["203.0.113.0", 24], ["224.0.0.0", 4], ["240.0.0.0", 4],
] as const) {
  blocked.addSubnet(prefix, bits, "ipv4");
}
for (const [prefix, bits] of [
  // No "::ffff:0:0/96" here: BlockList checks IPv4 addresses against IPv4-mapped IPv6 rules (and mapped addresses
  // against the IPv4 rules above), so that entry would refuse every IPv4 address.
  ["::", 128], ["::1", 128], ["64:ff9b::", 96], ["64:ff9b:1::", 48], ["100::", 64],
  ["2001::", 23], ["2001:db8::", 32], ["2002::", 16], ["fc00::", 7], ["fe80::", 10], ["fec0::", 10], ["ff00::", 8],
] as const) {
  blocked.addSubnet(prefix, bits, "ipv6");
}

/** True for addresses a server may reach on the public internet. */
export function isPublicUnicastAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 0) return false;
  if (family === 6) {
    // IPv4-mapped IPv6 (::ffff:a.b.c.d) would reach the embedded IPv4 address.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped?.[1]) return isPublicUnicastAddress(mapped[1]);
    return !blocked.check(address, "ipv6");
  }
  return !blocked.check(address, "ipv4");
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * dns.lookup that fails with ENOTPUBLIC when any address of the name is not public unicast: the `lookup` of an undici
 * Agent whose connections must stay off this server's own network (the DID document fetches here, and service
 * proxying's upstreams named by DID documents: xrpc/upstream-client.ts).
 */
export function publicOnlyLookup(hostname: string, options: dns.LookupOptions, callback: LookupCallback): void {
  dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    const refused = addresses.find((entry) => !isPublicUnicastAddress(entry.address));
    if (refused || addresses.length === 0) {
      const err: NodeJS.ErrnoException = new Error(`${hostname} resolves to a non-public address`);
      err.code = "ENOTPUBLIC";
      return callback(err, []);
    }
    if (options.all) return callback(null, addresses);
    const first = addresses[0]!;
    callback(null, first.address, first.family);
  });
}

const publicAgent = new Agent({ connect: { lookup: publicOnlyLookup as never }, keepAliveTimeout: 4 * SECOND });
const devAgent = new Agent({ keepAliveTimeout: 4 * SECOND });

function stripBrackets(hostname: string): string {
  return hostname.startsWith("[") ? hostname.slice(1, -1) : hostname;
}

/**
 * Why `target` may not be fetched under the rules above, or undefined when it may: https only, and no loopback or
 * non-public address written as the host, unless `allowPrivate`. Names that resolve to such addresses are refused
 * when connecting (publicOnlyLookup).
 */
export function refusedTarget(target: URL, allowPrivate: boolean): string | undefined {
  const allowHttp = allowPrivate && target.protocol === "http:";
  if (target.protocol !== "https:" && !allowHttp) return "must use https";
  const host = stripBrackets(target.hostname);
  if (!allowPrivate && (host === "localhost" || (net.isIP(host) !== 0 && !isPublicUnicastAddress(host)))) return "points at a non-public address";
  return undefined;
}

/** Fetches a JSON document under the rules above; errors are InvalidClientMetadataError. */
export async function fetchJsonDocument(url: string, options: SafeFetchOptions): Promise<unknown> {
  const bytes = await fetchDocumentBytes(url, {
    ...options,
    accept: "application/json",
    contentTypePattern: /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i,
    contentTypeName: "application/json",
  });
  try {
    return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8")) as unknown;
  } catch {
    throw new InvalidClientMetadataError(`${url} is not valid JSON`);
  }
}

export type SafeFetchBytesOptions = SafeFetchOptions & {
  /** The Accept request header. */
  accept: string;
  /** The response's Content-Type must match this. */
  contentTypePattern: RegExp;
  /** How the expected type is named in the error message; defaults to `accept`. */
  contentTypeName?: string;
};

/**
 * Fetches a document of any type under the rules above (https unless
 * allowPrivate, no redirects, exactly 200, the expected content type, size
 * cap, timeout, public addresses only) and returns its bytes; errors are
 * InvalidClientMetadataError, whose message names the URL and the reason.
 */
export async function fetchDocumentBytes(url: string, options: SafeFetchBytesOptions): Promise<Uint8Array> {
  const target = new URL(url);
  const refused = refusedTarget(target, options.allowPrivate);
  if (refused) throw new InvalidClientMetadataError(`${url} ${refused}`);

  let response;
  try {
    response = await fetch(target, {
      redirect: "manual",
      headers: { accept: options.accept },
      signal: AbortSignal.timeout(options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
      dispatcher: options.allowPrivate ? devAgent : publicAgent,
    });
  } catch (error) {
    throw new InvalidClientMetadataError(`Could not fetch ${url}: ${describeFetchError(error)}`, { cause: error });
  }
  try {
    if (response.status !== 200) throw new InvalidClientMetadataError(`${url} answered HTTP ${response.status}, expected 200`);
    const contentType = response.headers.get("content-type") ?? "";
    if (!options.contentTypePattern.test(contentType)) {
      throw new InvalidClientMetadataError(`${url} is not served as ${options.contentTypeName ?? options.accept}`);
    }
    return await readCapped(response.body as AsyncIterable<Uint8Array> | null, options.maxBytes ?? DEFAULT_MAX_BYTES, url);
  } finally {
    await response.body?.cancel().catch(() => {});
  }
}

async function readCapped(body: AsyncIterable<Uint8Array> | null, maxBytes: number, url: string): Promise<Uint8Array> {
  if (!body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for await (const chunk of body) {
      total += chunk.byteLength;
      if (total > maxBytes) throw new InvalidClientMetadataError(`${url} is larger than ${maxBytes} bytes`);
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof InvalidClientMetadataError) throw error;
    throw new InvalidClientMetadataError(`Could not read ${url}: ${describeFetchError(error)}`, { cause: error });
  }
  return Buffer.concat(chunks);
}

function describeFetchError(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === "TimeoutError" || error.name === "AbortError") return "timed out";
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    if (cause?.code === "ENOTPUBLIC") return "the host resolves to a non-public address";
    if (cause?.message) return cause.message;
    return error.message;
  }
  return "unknown error";
}
