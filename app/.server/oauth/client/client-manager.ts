import { importJWK, decodeProtectedHeader, jwtVerify, type JWK } from "jose";
import { z } from "zod";
import { jwkThumbprint } from "../dpop/dpop-verifier.ts";
import { InvalidClientError, InvalidClientMetadataError, InvalidRequestError } from "../errors/oauth-error.ts";
import type { ReplayStore } from "../replay/replay-store.ts";
import {
  assertFetchableClientId,
  isLoopbackClientId,
  loopbackClient,
  usableSigningKeys,
  validateClientMetadata,
  type ClientJwk,
  type OAuthClient,
} from "./client-metadata.ts";
import type { CachedClient, ClientStore } from "./client-store.ts";
import { fetchJsonDocument } from "./safe-fetch.ts";

export const CLIENT_ASSERTION_TYPE_JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

export type ClientCredentials = {
  client_assertion_type?: string;
  client_assertion?: string;
};

/**
 * The client key that authenticated a private_key_jwt client: its kid, its
 * algorithm and its RFC 7638 thumbprint. A kid alone names a slot in the
 * client's JWKS, not a key: new key material can be published under an old
 * kid, so requests, codes and grants are bound to all three.
 */
export type ClientKeyBinding = { kid: string; alg: "ES256"; jkt: string };

/** How the client proved itself on this request. */
export type ClientAuthentication = { method: "none" } | { method: "private_key_jwt"; key: ClientKeyBinding };

/** The key a request was authenticated with (null for a public client), as requests, codes and grants record it. */
export function clientKeyOf(auth: ClientAuthentication): ClientKeyBinding | null {
  return auth.method === "private_key_jwt" ? auth.key : null;
}

export function sameClientKey(a: ClientKeyBinding | null, b: ClientKeyBinding | null): boolean {
  if (a === null || b === null) return a === b;
  return a.kid === b.kid && a.alg === b.alg && a.jkt === b.jkt;
}

/**
 * A client must not sign DPoP proofs with its client-authentication key: the
 * proof key binds tokens to whoever holds it, the assertion key proves the
 * client, and one key doing both would merge the two (the reference atproto
 * provider refuses it too).
 */
export function assertDistinctDpopKey(auth: ClientAuthentication, dpopJkt: string): void {
  if (auth.method === "private_key_jwt" && auth.key.jkt === dpopJkt) {
    throw new InvalidRequestError("The DPoP proof must be signed with a different key than the client assertion");
  }
}

type ClientManagerOptions = {
  issuer: string;
  allowPrivate: boolean;
  cacheTtlMs: number;
  assertionMaxAgeMs: number;
  assertionMaxFutureMs: number;
  now?: () => number;
};

const jwksDocumentSchema = z.object({ keys: z.array(z.record(z.unknown())).max(100) });

/**
 * Resolves client_ids to validated clients (fetching and caching metadata
 * documents as docs/architecture.md, "Client metadata" describes) and authenticates confidential clients with
 * private_key_jwt (RFC 7523 §3, atproto OAuth profile).
 */
export class ClientManager {
  private keyCache = new Map<string, CryptoKey | Uint8Array>();

  constructor(
    private readonly store: ClientStore,
    private readonly replay: ReplayStore,
    private readonly options: ClientManagerOptions,
  ) {}

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  private loopbackClients = new Map<string, OAuthClient>();

  /** Loopback clients are derived from their client_id alone: parse each once. */
  private loopback(clientId: string): OAuthClient {
    let client = this.loopbackClients.get(clientId);
    if (!client) {
      client = loopbackClient(clientId);
      if (this.loopbackClients.size >= 1000) this.loopbackClients.clear();
      this.loopbackClients.set(clientId, client);
    }
    return client;
  }

  async getClient(clientId: string): Promise<OAuthClient> {
    return (await this.resolve(clientId)).client;
  }

  private async resolve(clientId: string): Promise<CachedClient> {
    if (typeof clientId !== "string" || clientId.length === 0 || clientId.length > 2048) {
      throw new InvalidRequestError("client_id is required");
    }
    // A loopback client seen before: its metadata is derived from the client_id alone, and recognising one again
    // parses the whole client_id (about a tenth of a refresh's CPU when done on every request).
    const knownLoopback = this.loopbackClients.get(clientId);
    if (knownLoopback) return { client: knownLoopback };
    if (isLoopbackClientId(clientId)) return { client: this.loopback(clientId) };
    const validation = { allowPrivate: this.options.allowPrivate, issuer: this.options.issuer };
    assertFetchableClientId(clientId, validation);

    const now = this.now();
    const cached = await this.store.findFresh(clientId, now);
    if (cached) return cached;

    // Only a document that validates is cached, and only what validation kept of it.
    const client = validateClientMetadata(clientId, await fetchJsonDocument(clientId, validation), validation);
    const entry: CachedClient = { client };
    if (client.jwksUri) entry.fetchedKeys = await this.fetchJwks(client.jwksUri);
    await this.store.save(clientId, entry, now, now + this.options.cacheTtlMs);
    return entry;
  }

  private async fetchJwks(uri: string): Promise<ClientJwk[]> {
    const parsed = jwksDocumentSchema.safeParse(await fetchJsonDocument(uri, { allowPrivate: this.options.allowPrivate }));
    if (!parsed.success) throw new InvalidClientMetadataError(`${uri} is not a JWK set`);
    return usableSigningKeys(parsed.data.keys as JWK[]);
  }

  /** The client's current signing keys (inline or from jwks_uri), usable ones only. */
  async currentKeys(clientId: string): Promise<ClientJwk[]> {
    const { client, fetchedKeys } = await this.resolve(clientId);
    return client.jwks ?? fetchedKeys ?? [];
  }

  /** True while the client still publishes exactly this key (same kid and same key material). */
  async publishesKey(clientId: string, binding: ClientKeyBinding): Promise<boolean> {
    return (await this.currentKeys(clientId)).some((key) => key.kid === binding.kid && thumbprintOf(key) === binding.jkt);
  }

  /**
   * Authenticates the client for this request. Public clients must not send
   * an assertion; confidential ones must send a fresh, unique, ES256-signed
   * assertion whose iss and sub are the client_id and whose aud is the issuer.
   */
  async authenticate(client: OAuthClient, credentials: ClientCredentials): Promise<ClientAuthentication> {
    if (client.authMethod === "none") {
      if (credentials.client_assertion || credentials.client_assertion_type) {
        throw new InvalidClientError("This client is registered as public (token_endpoint_auth_method none); do not send a client assertion");
      }
      return { method: "none" };
    }
    if (credentials.client_assertion_type !== CLIENT_ASSERTION_TYPE_JWT_BEARER) {
      throw new InvalidClientError(`client_assertion_type must be ${CLIENT_ASSERTION_TYPE_JWT_BEARER}`);
    }
    const assertion = credentials.client_assertion;
    if (!assertion) throw new InvalidClientError("client_assertion is required for this client");
    return this.verifyAssertion(client, assertion);
  }

  private async verifyAssertion(client: OAuthClient, assertion: string): Promise<ClientAuthentication> {
    let header;
    try {
      header = decodeProtectedHeader(assertion);
    } catch {
      throw new InvalidClientError("client_assertion is not a JWT");
    }
    if (header.alg !== "ES256") throw new InvalidClientError("client_assertion must be signed with ES256");
    const kid = header.kid;
    if (typeof kid !== "string" || !kid) throw new InvalidClientError("client_assertion must name its key (kid)");
    const jwk = (await this.currentKeys(client.clientId)).find((key) => key.kid === kid);
    if (!jwk) throw new InvalidClientError(`No ES256 key with kid ${kid} in the client's metadata`);

    let payload;
    try {
      const key = await this.importClientKey(client.clientId, jwk);
      ({ payload } = await jwtVerify(assertion, key, {
        algorithms: ["ES256"],
        issuer: client.clientId,
        subject: client.clientId,
        // RFC 7523 §3 (4): "The JWT MUST contain an "exp" (expiration time) claim"; jose also refuses an expired one.
        requiredClaims: ["jti", "iat", "exp"],
        currentDate: new Date(this.now()),
      }));
    } catch (error) {
      throw new InvalidClientError(`client_assertion is invalid: ${error instanceof Error ? error.message : "verification failed"}`);
    }
    // RFC 7523 §3 (3): aud identifies this authorization server. Only this issuer is accepted, alone: an assertion
    // also addressed to other audiences could be replayed there, or came from there.
    const audience = Array.isArray(payload.aud) && payload.aud.length === 1 ? payload.aud[0] : payload.aud;
    if (audience !== this.options.issuer) throw new InvalidClientError(`client_assertion aud must be exactly ${this.options.issuer}`);
    const now = this.now();
    const issuedAt = (payload.iat ?? 0) * 1000;
    if (issuedAt < now - this.options.assertionMaxAgeMs) throw new InvalidClientError("client_assertion is too old (iat)");
    if (issuedAt > now + this.options.assertionMaxFutureMs) throw new InvalidClientError("client_assertion iat is in the future");
    // An assertion is accepted only while its iat is recent, so its jti needs remembering only that long (RFC 7523 §3 (7)).
    const rememberUntil = now + this.options.assertionMaxAgeMs + this.options.assertionMaxFutureMs;
    if (!(await this.replay.recordUnique(`client-assertion:${client.clientId}`, String(payload.jti), rememberUntil))) {
      throw new InvalidClientError("client_assertion replayed (jti already used)");
    }
    return { method: "private_key_jwt", key: { kid, alg: "ES256", jkt: thumbprintOf(jwk) } };
  }

  private async importClientKey(clientId: string, jwk: ClientJwk): Promise<CryptoKey | Uint8Array> {
    const cacheKey = `${clientId}\u0000${jwk.kid}\u0000${jwk.x}\u0000${jwk.y}`;
    let key = this.keyCache.get(cacheKey);
    if (!key) {
      key = await importJWK({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, "ES256");
      if (this.keyCache.size > 1000) this.keyCache.clear();
      this.keyCache.set(cacheKey, key);
    }
    return key;
  }
}

function thumbprintOf(key: ClientJwk): string {
  return jwkThumbprint(key);
}
