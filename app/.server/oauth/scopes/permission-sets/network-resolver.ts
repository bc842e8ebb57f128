import dns from "node:dns";
import { isNsid, type LexiconPermissionSet } from "@atproto/oauth-scopes";
import { def, formatDataKey, MemoryBlockstore, MST, readCarWithRoot, verifyCommitSig } from "@atproto/repo";
import { CID } from "multiformats/cid";
import { DEFAULT_PLC_DIRECTORY_URL } from "../../../config.ts";
import { atprotoPdsEndpoint, atprotoSigningKey } from "../../../identity/did-document.ts";
import { DidResolver, isResolvableDid } from "../../../identity/did-resolver.ts";
import { fetchDocumentBytes } from "../../client/safe-fetch.ts";
import { DAY, MINUTE, SECOND } from "../../../util/time.ts";
import { permissionSetFromLexicon } from "./lexicon-document.ts";
import type { PermissionSetCache } from "./permission-set-cache.ts";
import { PermissionSetResolutionError, type PermissionSetResolver } from "./permission-set-resolver.ts";

/**
 * Resolves permission sets on the atproto network (atproto lexicon
 * resolution):
 *
 *   NSID com.example.calendar.authFull
 *   → authority calendar.example.com (the NSID less its name, reversed)
 *   → DNS TXT _lexicon.calendar.example.com: "did=<did>" (exactly one)
 *   → the DID document (did:plc from the PLC directory, did:web from /.well-known/did.json: identity/did-resolver.ts)
 *   → its #atproto_pds service endpoint and its #atproto signing key
 *   → GET <pds>/xrpc/com.atproto.sync.getRecord?did=<did>&collection=com.atproto.lexicon.schema&rkey=<nsid>
 *   → a CAR file, verified as the reference's lexicon resolver does (issue 18, item 6): every block's CID matches
 *     its bytes, the root is a commit of that DID signed by its #atproto key, and the MST under the commit leads to
 *     the record com.atproto.lexicon.schema/<nsid>; then the record is validated as a permission set.
 *
 * So the PDS is not trusted: a record it altered, signed with another key, or
 * that the proof does not reach is refused.
 *
 * Every HTTP request goes through the hardened fetch (https only, no
 * redirects, public addresses only, size caps, timeouts) unless
 * allowPrivate is set for development and tests.
 *
 * Results are cached in the PermissionSetCache (docs/architecture.md, "Scopes and the data server", the atproto
 * lexicon resolution guidance): younger than 15 minutes they are served as
 * they are; up to 24 hours a refresh is tried and the cached copy is served
 * when it fails; older than that a refresh is required; after 90 days the
 * row is dropped.
 */

export const LEXICON_SCHEMA_COLLECTION = "com.atproto.lexicon.schema";

const FRESH_FOR = 15 * MINUTE;
const SERVE_STALE_FOR = DAY;
const RETAIN_FOR = 90 * DAY;
const DEFAULT_TIMEOUT_MS = 10 * SECOND;
const DEFAULT_DNS_TIMEOUT_MS = 3 * SECOND;
const DEFAULT_MAX_CAR_BYTES = 1024 * 1024;

export type NetworkPermissionSetResolverOptions = {
  /** Where resolved lexicons are kept (SqlPermissionSetCache in the server). */
  cache: PermissionSetCache;
  /**
   * Development and tests only: allows http (for did:web hosts that are
   * localhost or IP literals, and PDS endpoints) and loopback/private
   * addresses. Never in production.
   */
  allowPrivate?: boolean;
  /** DNS servers for the _lexicon TXT lookup, e.g. ["127.0.0.1:5353"]; the system's when absent. */
  dnsServers?: string[];
  /** Default https://plc.directory. */
  plcDirectoryUrl?: string;
  /** The clock, epoch milliseconds; Date.now by default. */
  now?: () => number;
  /** Per HTTP request; default 10 s. */
  timeoutMs?: number;
  /** Per DNS try (two tries); default 3 s. */
  dnsTimeoutMs?: number;
  /** Largest CAR file accepted from a PDS; default 1 MiB. */
  maxCarBytes?: number;
  /** Told when a stale cached copy is served because its refresh failed; console.warn by default. */
  onStaleServed?: (nsid: string, error: PermissionSetResolutionError) => void;
  /** The server's one DID resolver (services.ts); one of this resolver's own, with the options above, when absent. */
  didResolver?: DidResolver;
};

type Fetched = { document: unknown; permissionSet: LexiconPermissionSet };

export class NetworkPermissionSetResolver implements PermissionSetResolver {
  private readonly cache: PermissionSetCache;
  private readonly allowPrivate: boolean;
  private readonly didResolver: DidResolver;
  private readonly now: () => number;
  private readonly timeoutMs: number;
  private readonly maxCarBytes: number;
  private readonly dns: dns.promises.Resolver;
  private readonly onStaleServed: (nsid: string, error: PermissionSetResolutionError) => void;
  private readonly inFlight = new Map<string, Promise<LexiconPermissionSet>>();

  constructor(options: NetworkPermissionSetResolverOptions) {
    this.cache = options.cache;
    this.allowPrivate = options.allowPrivate ?? false;
    this.now = options.now ?? Date.now;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.didResolver =
      options.didResolver ??
      new DidResolver({ plcDirectoryUrl: options.plcDirectoryUrl ?? DEFAULT_PLC_DIRECTORY_URL, allowPrivate: this.allowPrivate, now: this.now, timeoutMs: this.timeoutMs });
    this.maxCarBytes = options.maxCarBytes ?? DEFAULT_MAX_CAR_BYTES;
    this.dns = new dns.promises.Resolver({ timeout: options.dnsTimeoutMs ?? DEFAULT_DNS_TIMEOUT_MS, tries: 2 });
    if (options.dnsServers && options.dnsServers.length > 0) this.dns.setServers(options.dnsServers);
    this.onStaleServed =
      options.onStaleServed ??
      ((nsid, error) => console.warn(`Serving the cached permission set ${nsid}: refreshing it failed: ${error.message}`));
  }

  resolve(nsid: string): Promise<LexiconPermissionSet> {
    if (!isNsid(nsid)) return Promise.reject(new PermissionSetResolutionError(nsid, `${JSON.stringify(nsid)} is not a valid NSID`));
    let pending = this.inFlight.get(nsid);
    if (!pending) {
      pending = this.resolveCached(nsid).finally(() => this.inFlight.delete(nsid));
      this.inFlight.set(nsid, pending);
    }
    return pending;
  }

  private async resolveCached(nsid: string): Promise<LexiconPermissionSet> {
    const now = this.now();
    const cached = await this.cache.get(nsid, now);
    let cachedSet: LexiconPermissionSet | undefined;
    if (cached) {
      try {
        cachedSet = permissionSetFromLexicon(nsid, cached.document);
      } catch {
        await this.cache.delete(nsid); // written by an older, laxer version: fetch again
      }
    }
    if (cached && cachedSet) {
      const age = now - cached.fetchedAt;
      if (age < FRESH_FOR) return cachedSet;
      if (age < SERVE_STALE_FOR) {
        try {
          return await this.fetchAndStore(nsid);
        } catch (error) {
          this.onStaleServed(nsid, asResolutionError(nsid, error));
          return cachedSet;
        }
      }
    }
    return this.fetchAndStore(nsid);
  }

  private async fetchAndStore(nsid: string): Promise<LexiconPermissionSet> {
    let fetched: Fetched;
    try {
      fetched = await this.fetchLexicon(nsid);
    } catch (error) {
      throw asResolutionError(nsid, error);
    }
    const fetchedAt = this.now();
    await this.cache.put({ nsid, document: fetched.document, fetchedAt, expiresAt: fetchedAt + RETAIN_FOR });
    return fetched.permissionSet;
  }

  private async fetchLexicon(nsid: string): Promise<Fetched> {
    const authority = nsidAuthority(nsid);
    const did = await this.lexiconDid(nsid, authority);
    const { pds, signingKey } = await this.authorityService(nsid, did);
    const url = new URL("/xrpc/com.atproto.sync.getRecord", pds);
    url.searchParams.set("did", did);
    url.searchParams.set("collection", LEXICON_SCHEMA_COLLECTION);
    url.searchParams.set("rkey", nsid);

    let car: Uint8Array;
    try {
      car = await fetchDocumentBytes(url.href, {
        allowPrivate: this.allowPrivate,
        accept: "application/vnd.ipld.car",
        contentTypePattern: /^application\/vnd\.ipld\.car\s*(?:;|$)/i,
        maxBytes: this.maxCarBytes,
        timeoutMs: this.timeoutMs,
      });
    } catch (error) {
      throw new PermissionSetResolutionError(nsid, `Fetching the lexicon record of ${nsid} from ${did}'s PDS failed: ${message(error)}`, {
        cause: error,
      });
    }
    const record = await verifiedLexiconRecord(nsid, did, signingKey, car);
    const document = ipldToJson(record);
    return { document, permissionSet: permissionSetFromLexicon(nsid, document) };
  }

  /** The DID named by the _lexicon TXT record of the NSID's authority. */
  private async lexiconDid(nsid: string, authority: string): Promise<string> {
    const name = `_lexicon.${authority}`;
    let answers: string[][];
    try {
      answers = await this.dns.resolveTxt(name);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === dns.NOTFOUND || code === dns.NODATA) {
        throw new PermissionSetResolutionError(nsid, `No lexicon authority for ${nsid}: there is no TXT record at ${name}`, { cause: error });
      }
      throw new PermissionSetResolutionError(nsid, `The DNS lookup of ${name} for ${nsid} failed: ${code ?? message(error)}`, { cause: error });
    }
    const values = answers.map((chunks) => chunks.join(""));
    const named = values.filter((value) => value.startsWith("did=")).map((value) => value.slice("did=".length).trim());
    if (named.length === 0) {
      throw new PermissionSetResolutionError(nsid, `No lexicon authority for ${nsid}: the TXT records at ${name} have no did= entry`);
    }
    const valid = [...new Set(named.filter(isResolvableDid))];
    if (valid.length === 0) {
      throw new PermissionSetResolutionError(nsid, `The TXT record at ${name} does not name a did:plc or did:web DID`);
    }
    if (valid.length > 1) {
      throw new PermissionSetResolutionError(nsid, `The TXT records at ${name} name more than one DID: ${valid.join(", ")}`);
    }
    return valid[0]!;
  }

  /** The #atproto_pds service endpoint and the #atproto signing key (a did:key) of `did`'s DID document. */
  private async authorityService(nsid: string, did: string): Promise<{ pds: URL; signingKey: string }> {
    let document: Awaited<ReturnType<DidResolver["resolve"]>>;
    try {
      document = await this.didResolver.resolve(did);
    } catch (error) {
      throw new PermissionSetResolutionError(nsid, `Resolving ${did} (the lexicon authority of ${nsid}) failed: ${message(error)}`, { cause: error });
    }
    const serviceEndpoint = atprotoPdsEndpoint(document);
    if (serviceEndpoint === undefined) {
      throw new PermissionSetResolutionError(nsid, `The DID document of ${did} names no atproto PDS (#atproto_pds service)`);
    }
    const signingKey = atprotoSigningKey(document);
    if (signingKey === undefined) {
      throw new PermissionSetResolutionError(nsid, `The DID document of ${did} names no usable #atproto signing key: its records cannot be verified`);
    }
    let endpoint: URL;
    try {
      endpoint = new URL(serviceEndpoint);
    } catch {
      throw new PermissionSetResolutionError(nsid, `The PDS endpoint of ${did} is not a URL: ${JSON.stringify(serviceEndpoint)}`);
    }
    if (endpoint.protocol !== "https:" && !(this.allowPrivate && endpoint.protocol === "http:")) {
      throw new PermissionSetResolutionError(nsid, `The PDS endpoint of ${did} must use https: ${endpoint.href}`);
    }
    if (endpoint.username || endpoint.password) {
      throw new PermissionSetResolutionError(nsid, `The PDS endpoint of ${did} must not carry credentials`);
    }
    return { pds: endpoint, signingKey };
  }
}

/** `com.example.calendar.authFull` → `calendar.example.com`. */
export function nsidAuthority(nsid: string): string {
  return nsid.split(".").slice(0, -1).reverse().join(".").toLowerCase();
}

/**
 * The com.atproto.lexicon.schema record `nsid` of `did`, from the CAR file getRecord answered, verified as the
 * reference's lexicon resolver verifies it (atproto repository spec, https://atproto.com/specs/repository): every
 * block's CID matches its bytes; the root is a commit of `did` whose signature verifies with `signingKey` (the DID
 * document's #atproto key; low-S only); the commit's MST holds the key `com.atproto.lexicon.schema/<nsid>`, walked
 * node by node through the blocks of the CAR; and the record block it points to is the lexicon with that id.
 */
export async function verifiedLexiconRecord(nsid: string, did: string, signingKey: string, car: Uint8Array): Promise<Record<string, unknown>> {
  const refuse = (why: string, cause?: unknown) =>
    new PermissionSetResolutionError(nsid, `The lexicon record of ${nsid} from ${did}'s PDS ${why}`, cause === undefined ? undefined : { cause });
  let root: Awaited<ReturnType<typeof readCarWithRoot>>;
  try {
    root = await readCarWithRoot(car); // checks each block's CID against its bytes
  } catch (error) {
    throw refuse(`is not a valid CAR file with one root and blocks matching their CIDs: ${message(error)}`, error);
  }
  const blocks = new MemoryBlockstore(root.blocks);
  const signed = await readCommit(blocks, root.root).catch((error: unknown) => {
    throw refuse(`has no repository commit at its root: ${message(error)}`, error);
  });
  if (signed.did !== did) throw refuse(`is in a commit of another repository (${signed.did})`);
  if (!(await verifyCommitSig(signed, signingKey))) throw refuse(`is in a commit whose signature does not verify with ${did}'s #atproto key`);
  let recordCid: Awaited<ReturnType<MST["get"]>>;
  try {
    recordCid = await MST.load(blocks, signed.data).get(formatDataKey(LEXICON_SCHEMA_COLLECTION, nsid));
  } catch (error) {
    throw refuse(`does not carry a complete proof of the record under the signed commit: ${message(error)}`, error);
  }
  if (!recordCid) throw refuse(`is not in the signed repository: the proof shows no ${LEXICON_SCHEMA_COLLECTION}/${nsid}`);
  let value: unknown;
  try {
    value = await blocks.readRecord(recordCid);
  } catch (error) {
    throw refuse(`is missing or not a record (${recordCid.toString()}): ${message(error)}`, error);
  }
  if (!isPlainObject(value) || value.$type !== LEXICON_SCHEMA_COLLECTION || value.id !== nsid) {
    throw refuse(`is not a ${LEXICON_SCHEMA_COLLECTION} record with id ${nsid}`);
  }
  return value;
}

function readCommit(blocks: MemoryBlockstore, cid: Parameters<MemoryBlockstore["readObj"]>[0]) {
  return blocks.readObj(cid, def.commit);
}

/** The atproto JSON form of decoded DAG-CBOR: CIDs as {$link}, bytes as {$bytes} (base64, unpadded). */
export function ipldToJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(ipldToJson);
  if (value instanceof Uint8Array) return { $bytes: Buffer.from(value).toString("base64").replace(/=+$/, "") };
  const cid = CID.asCID(value);
  if (cid) return { $link: cid.toString() };
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, entry] of Object.entries(value)) out[key] = ipldToJson(entry);
    return out;
  }
  return value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array) && !CID.asCID(value);
}

function asResolutionError(nsid: string, error: unknown): PermissionSetResolutionError {
  if (error instanceof PermissionSetResolutionError) return error;
  return new PermissionSetResolutionError(nsid, `Resolving the permission set ${nsid} failed: ${message(error)}`, { cause: error });
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
