import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT, type JWK } from "jose";

/**
 * A real HTTP server on 127.0.0.1 that plays the part of an OAuth client's
 * web host: it serves the client metadata document (the client_id URL), a
 * JWKS for `jwks_uri` clients and anything else a test puts on it. Tests can
 * change or remove documents while the authorization server is running and
 * count how often each path was fetched.
 *
 * The authorization server only fetches from loopback because the test
 * server starts with ATRIUM_DEV_ALLOW_PRIVATE_CLIENTS=1.
 */

export const METADATA_PATH = "/client-metadata.json";
export const JWKS_PATH = "/jwks.json";
export const CLIENT_SCOPE = "atproto transition:generic";

export type ServedDocument = {
  /** An object is sent as JSON; a string is sent as is. */
  body: unknown;
  status?: number;
  contentType?: string;
};

export type ClientKey = {
  kid: string;
  privateKey: CryptoKey;
  /** The public JWK as published: kty, crv, x, y, kid, alg, use. */
  publicJwk: JWK;
};

/** A fresh ES256 key pair for signing client assertions. */
export async function generateClientKey(kid: string = `key-${randomUUID().slice(0, 8)}`): Promise<ClientKey> {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = await exportJWK(publicKey);
  return {
    kid,
    privateKey: privateKey as CryptoKey,
    publicJwk: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, kid, alg: "ES256", use: "sig" },
  };
}

export type AssertionOptions = {
  clientId: string;
  /** The authorization server's issuer (an array for tests of audience lists). */
  audience: string | string[];
  /** Overrides for tests that send broken assertions. */
  kid?: string;
  iat?: number;
  /** Expiry (default: a minute after iat, as the official atproto client sets it); null leaves exp out. */
  exp?: number | null;
  jti?: string;
  iss?: string;
  sub?: string;
};

/** An RFC 7523 client assertion as atproto confidential clients send it. */
export async function signClientAssertion(key: ClientKey, options: AssertionOptions): Promise<string> {
  const iat = options.iat ?? Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({ jti: options.jti ?? randomUUID() })
    .setProtectedHeader({ alg: "ES256", kid: options.kid ?? key.kid })
    .setIssuer(options.iss ?? options.clientId)
    .setSubject(options.sub ?? options.clientId)
    .setAudience(options.audience)
    .setIssuedAt(iat);
  if (options.exp !== null) jwt.setExpirationTime(options.exp ?? iat + 60);
  return jwt.sign(key.privateKey);
}

export const JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/** Form fields carrying a client assertion (for DpopClient's extraParams). */
export function assertionParams(assertion: string): Record<string, string> {
  return { client_assertion_type: JWT_BEARER, client_assertion: assertion };
}

export type MetadataOptions = {
  /** Publish these keys inline (`jwks`) or behind `jwks_uri`. */
  keys?: ClientKey[];
  keysVia?: "jwks" | "jwks_uri";
  authMethod?: "private_key_jwt" | "none";
  clientName?: string;
  /** Fields to add, replace or (with undefined) remove. */
  overrides?: Record<string, unknown>;
};

export class ClientHost {
  private readonly documents = new Map<string, ServedDocument>();
  private readonly counts = new Map<string, number>();

  private constructor(
    private readonly server: http.Server,
    readonly origin: string,
  ) {}

  static async start(): Promise<ClientHost> {
    const ref: { host?: ClientHost } = {};
    const server = http.createServer((req, res) => ref.host!.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    ref.host = new ClientHost(server, `http://127.0.0.1:${port}`);
    return ref.host;
  }

  /** The client_id: the URL of the metadata document. */
  get clientId(): string {
    return `${this.origin}${METADATA_PATH}`;
  }

  get redirectUri(): string {
    return `${this.origin}/callback`;
  }

  get jwksUri(): string {
    return `${this.origin}${JWKS_PATH}`;
  }

  /** A valid atproto client metadata document for this host. */
  metadata(options: MetadataOptions = {}): Record<string, unknown> {
    const authMethod = options.authMethod ?? "private_key_jwt";
    const document: Record<string, unknown> = {
      client_id: this.clientId,
      client_name: options.clientName ?? "Test Confidential App",
      dpop_bound_access_tokens: true,
      redirect_uris: [this.redirectUri],
      scope: CLIENT_SCOPE,
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      application_type: "web",
      token_endpoint_auth_method: authMethod,
    };
    if (authMethod === "private_key_jwt") {
      document.token_endpoint_auth_signing_alg = "ES256";
      const keys = (options.keys ?? []).map((key) => key.publicJwk);
      if ((options.keysVia ?? "jwks") === "jwks") document.jwks = { keys };
      else document.jwks_uri = this.jwksUri;
    }
    for (const [name, value] of Object.entries(options.overrides ?? {})) {
      if (value === undefined) delete document[name];
      else document[name] = value;
    }
    return document;
  }

  /** Serves (or replaces) a document at a path. */
  serve(path: string, document: ServedDocument): void {
    this.documents.set(path, document);
  }

  /** Serves the client metadata document. */
  serveMetadata(body: unknown, options: Omit<ServedDocument, "body"> = {}): void {
    this.serve(METADATA_PATH, { ...options, body });
  }

  /** Serves a JWKS at jwks_uri. */
  serveJwks(keys: ClientKey[]): void {
    this.serve(JWKS_PATH, { body: { keys: keys.map((key) => key.publicJwk) } });
  }

  /** Stops serving a path (it then answers 404). */
  remove(path: string): void {
    this.documents.delete(path);
  }

  /** How many requests reached a path (all paths when omitted). */
  requestCount(path?: string): number {
    if (path !== undefined) return this.counts.get(path) ?? 0;
    return [...this.counts.values()].reduce((sum, count) => sum + count, 0);
  }

  resetCounts(): void {
    this.counts.clear();
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const path = new URL(req.url ?? "/", this.origin).pathname;
    this.counts.set(path, (this.counts.get(path) ?? 0) + 1);
    const document = this.documents.get(path);
    if (!document || req.method !== "GET") {
      res.writeHead(404, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ error: "not found" }));
      return;
    }
    const text = typeof document.body === "string" ? document.body : JSON.stringify(document.body);
    res.writeHead(document.status ?? 200, {
      "Content-Type": document.contentType ?? "application/json",
      "Cache-Control": "no-store",
    });
    res.end(text);
  }
}

/**
 * Starts a host serving a confidential (private_key_jwt) client with these
 * keys, inline or behind jwks_uri.
 */
export async function startConfidentialClientHost(
  keys: ClientKey[],
  options: Omit<MetadataOptions, "keys" | "authMethod"> = {},
): Promise<ClientHost> {
  const host = await ClientHost.start();
  host.serveMetadata(host.metadata({ ...options, keys, authMethod: "private_key_jwt" }));
  if (options.keysVia === "jwks_uri") host.serveJwks(keys);
  return host;
}
