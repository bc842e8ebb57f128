import { importJWK, decodeProtectedHeader, jwtVerify, type JWK } from "jose";
import { z } from "zod";
import { InvalidClientError, InvalidClientMetadataError, InvalidRequestError } from "../errors/oauth-error.ts";
import type { ReplayStore } from "../replay/replay-store.ts";
import {
  assertFetchableClientId,
  isLoopbackClientId,
  loopbackClient,
  validateClientMetadata,
  type OAuthClient,
} from "./client-metadata.ts";
import type { CachedClientDocument, ClientStore } from "./client-store.ts";
import { fetchJsonDocument } from "./safe-fetch.ts";

export const CLIENT_ASSERTION_TYPE_JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

export type ClientCredentials = {
  client_assertion_type?: string;
  client_assertion?: string;
};

/** How the client proved itself on this request. */
export type ClientAuthentication = { method: "none" } | { method: "private_key_jwt"; kid: string };

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
 * documents per DESIGN 4.3) and authenticates confidential clients with
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

  private async resolve(clientId: string): Promise<{ client: OAuthClient; fetchedJwks?: JWK[] }> {
    if (typeof clientId !== "string" || clientId.length === 0 || clientId.length > 2048) {
      throw new InvalidRequestError("client_id is required");
    }
    if (isLoopbackClientId(clientId)) return { client: this.loopback(clientId) };
    const validation = { allowPrivate: this.options.allowPrivate };
    assertFetchableClientId(clientId, validation);

    const now = this.now();
    const cached = await this.store.findFresh(clientId, now);
    if (cached) return { client: validateClientMetadata(clientId, cached.document, validation), fetchedJwks: cached.fetchedJwks };

    const document = await fetchJsonDocument(clientId, validation);
    const client = validateClientMetadata(clientId, document, validation);
    const entry: CachedClientDocument = { document };
    if (client.jwksUri) entry.fetchedJwks = await this.fetchJwks(client.jwksUri);
    await this.store.save(clientId, entry, now, now + this.options.cacheTtlMs);
    return { client, fetchedJwks: entry.fetchedJwks };
  }

  private async fetchJwks(uri: string): Promise<JWK[]> {
    const parsed = jwksDocumentSchema.safeParse(await fetchJsonDocument(uri, { allowPrivate: this.options.allowPrivate }));
    if (!parsed.success) throw new InvalidClientMetadataError(`${uri} is not a JWK set`);
    return parsed.data.keys as JWK[];
  }

  /** The client's current signing keys (inline or from jwks_uri). */
  async currentKeys(clientId: string): Promise<JWK[]> {
    const { client, fetchedJwks } = await this.resolve(clientId);
    return client.jwks ?? fetchedJwks ?? [];
  }

  /** True while a key with this kid is still published by the client. */
  async hasKey(clientId: string, kid: string): Promise<boolean> {
    return (await this.currentKeys(clientId)).some((key) => key.kid === kid && usableSigningKey(key));
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
    const jwk = (await this.currentKeys(client.clientId)).find((key) => key.kid === kid && usableSigningKey(key));
    if (!jwk) throw new InvalidClientError(`No ES256 key with kid ${kid} in the client's metadata`);

    let payload;
    try {
      const key = await this.importClientKey(client.clientId, jwk);
      ({ payload } = await jwtVerify(assertion, key, {
        algorithms: ["ES256"],
        issuer: client.clientId,
        subject: client.clientId,
        audience: this.options.issuer,
        requiredClaims: ["jti", "iat"],
      }));
    } catch (error) {
      throw new InvalidClientError(`client_assertion is invalid: ${error instanceof Error ? error.message : "verification failed"}`);
    }
    const now = this.now();
    const issuedAt = (payload.iat ?? 0) * 1000;
    if (issuedAt < now - this.options.assertionMaxAgeMs) throw new InvalidClientError("client_assertion is too old (iat)");
    if (issuedAt > now + this.options.assertionMaxFutureMs) throw new InvalidClientError("client_assertion iat is in the future");
    const expiresAt = Math.max(now + this.options.assertionMaxAgeMs, (payload.exp ?? 0) * 1000);
    if (!this.replay.recordUnique(`client-assertion:${client.clientId}`, String(payload.jti), expiresAt)) {
      throw new InvalidClientError("client_assertion replayed (jti already used)");
    }
    return { method: "private_key_jwt", kid };
  }

  private async importClientKey(clientId: string, jwk: JWK): Promise<CryptoKey | Uint8Array> {
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

function usableSigningKey(key: JWK & { revoked?: unknown }): boolean {
  return (
    key.kty === "EC" &&
    key.crv === "P-256" &&
    (key.alg === undefined || key.alg === "ES256") &&
    (key.use === undefined || key.use === "sig") &&
    key.d === undefined &&
    key.revoked === undefined
  );
}
