import { isOAuthClientIdLoopback, oauthClientMetadataSchema, atprotoLoopbackClientMetadata } from "@atproto/oauth-types";
import type { JWK } from "jose";
import { hasHiddenCharacters, visibleText } from "../../util/visible-text.ts";
import { InvalidClientMetadataError } from "../errors/oauth-error.ts";

export type ClientAuthMethod = "none" | "private_key_jwt";
export type ApplicationType = "web" | "native";

/** A client as the provider uses it: validated metadata, normalised. */
export type OAuthClient = {
  clientId: string;
  isLoopback: boolean;
  applicationType: ApplicationType;
  authMethod: ClientAuthMethod;
  redirectUris: string[];
  /** The scope values the client declared. */
  scopes: string[];
  clientName?: string;
  /** The declared name held bidi or control characters, removed from clientName: the screens warn about it. */
  clientNameHadHiddenCharacters?: boolean;
  clientUri?: string;
  logoUri?: string;
  tosUri?: string;
  policyUri?: string;
  /** For private_key_jwt: inline keys (their usable public members), or the URL to fetch them from. */
  jwks?: ClientJwk[];
  jwksUri?: string;
};

/** `issuer`: this server's origin, where no client may redirect (checkRedirectUri). */
export type ValidationOptions = { allowPrivate: boolean; issuer?: string };

/**
 * Bounds on what a client document may declare. Real clients declare one to
 * three redirect URIs, a few scope values and one or two keys; the bounds
 * keep every cached client small (docs/decisions/0011).
 */
export const CLIENT_LIMITS = {
  redirectUris: 10,
  uriLength: 2048,
  scopeLength: 4096,
  nameLength: 100,
  /** Usable signing keys kept (inline or from jwks_uri). */
  keys: 20,
} as const;

/** The public members of a usable ES256 signing key: all a cached client keeps of its JWKS. */
export type ClientJwk = { kty: "EC"; crv: "P-256"; x: string; y: string; kid?: string; alg?: "ES256"; use?: "sig" };

export function isLoopbackClientId(clientId: string): boolean {
  return isOAuthClientIdLoopback(clientId);
}

/** atproto loopback development client: metadata derived from the client_id, never fetched. */
export function loopbackClient(clientId: string): OAuthClient {
  let metadata;
  try {
    metadata = atprotoLoopbackClientMetadata(clientId);
  } catch (error) {
    throw new InvalidClientMetadataError(`Invalid loopback client_id: ${errorText(error)}`, { cause: error });
  }
  return {
    clientId,
    isLoopback: true,
    applicationType: "native",
    authMethod: "none",
    redirectUris: [...metadata.redirect_uris],
    scopes: splitScope(metadata.scope),
  };
}

/** Checks the form of a discoverable (https) client_id before fetching it. */
export function assertFetchableClientId(clientId: string, options: ValidationOptions): URL {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    throw new InvalidClientMetadataError("client_id must be a URL");
  }
  const httpAllowed = options.allowPrivate && url.protocol === "http:";
  if (url.protocol !== "https:" && !httpAllowed) throw new InvalidClientMetadataError("client_id must be an https URL");
  if (url.hash || url.username || url.password) throw new InvalidClientMetadataError("client_id must not carry a fragment or credentials");
  if (url.href !== clientId) throw new InvalidClientMetadataError("client_id must be a normalized URL");
  return url;
}

/** Validates a fetched client metadata document against RFC 7591 and the atproto rules. */
export function validateClientMetadata(clientId: string, document: unknown, options: ValidationOptions): OAuthClient {
  const parsed = oauthClientMetadataSchema.safeParse(document);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new InvalidClientMetadataError(`Invalid client metadata: ${first?.path.join(".") || "document"}: ${first?.message ?? "invalid"}`);
  }
  const m = parsed.data;
  const fail = (message: string): never => {
    throw new InvalidClientMetadataError(`Invalid client metadata: ${message}`);
  };
  if (m.redirect_uris.length > CLIENT_LIMITS.redirectUris) fail(`at most ${CLIENT_LIMITS.redirectUris} redirect_uris are accepted`);
  for (const uri of [...m.redirect_uris, m.client_uri, m.logo_uri, m.tos_uri, m.policy_uri, m.jwks_uri]) {
    if (uri && uri.length > CLIENT_LIMITS.uriLength) fail(`URIs may be at most ${CLIENT_LIMITS.uriLength} characters`);
  }
  if ((m.scope ?? "").length > CLIENT_LIMITS.scopeLength) fail(`scope may be at most ${CLIENT_LIMITS.scopeLength} characters`);
  if (m.client_id !== clientId) fail("client_id in the document must equal the URL it was fetched from");
  if (m.dpop_bound_access_tokens !== true) fail("dpop_bound_access_tokens must be true");
  if (!m.response_types.includes("code")) fail('response_types must include "code"');
  if (!m.grant_types.includes("authorization_code")) fail('grant_types must include "authorization_code"');
  const scopes = splitScope(m.scope);
  if (!scopes.includes("atproto")) fail('scope must include "atproto"');

  const authMethod = m.token_endpoint_auth_method;
  if (authMethod !== "none" && authMethod !== "private_key_jwt") fail(`token_endpoint_auth_method ${authMethod} is not supported`);
  let jwks: ClientJwk[] | undefined;
  if (authMethod === "private_key_jwt") {
    if (Boolean(m.jwks) === Boolean(m.jwks_uri)) fail("private_key_jwt clients must publish exactly one of jwks and jwks_uri");
    if (m.token_endpoint_auth_signing_alg !== undefined && m.token_endpoint_auth_signing_alg !== "ES256") {
      fail("token_endpoint_auth_signing_alg must be ES256");
    }
    jwks = m.jwks ? usableSigningKeys(m.jwks.keys as JWK[]) : undefined;
    if (m.jwks_uri) assertHttpsOrDev(m.jwks_uri, options, "jwks_uri");
  }

  const applicationType: ApplicationType = m.application_type === "native" ? "native" : "web";
  const clientUrl = new URL(clientId);
  for (const uri of m.redirect_uris) checkRedirectUri(uri, applicationType, clientUrl, options, fail);

  return {
    clientId,
    isLoopback: false,
    applicationType,
    authMethod: authMethod as ClientAuthMethod,
    redirectUris: [...m.redirect_uris],
    scopes,
    clientName: visibleText(m.client_name, CLIENT_LIMITS.nameLength),
    ...(hasHiddenCharacters(m.client_name) ? { clientNameHadHiddenCharacters: true } : {}),
    clientUri: httpsOnly(m.client_uri),
    logoUri: httpsOnly(m.logo_uri),
    tosUri: httpsOnly(m.tos_uri),
    policyUri: httpsOnly(m.policy_uri),
    jwks,
    jwksUri: m.jwks_uri,
  };
}

function checkRedirectUri(
  uri: string,
  applicationType: ApplicationType,
  clientUrl: URL,
  options: ValidationOptions,
  fail: (message: string) => never,
): void {
  const url = new URL(uri);
  if (url.hash) fail(`redirect_uri ${uri} must not contain a fragment`);
  // No client's answer belongs on this server's own pages: one that landed there would arrive as a same-origin
  // navigation from the screen (Allow, Deny), which this server takes as the person's own doing (the language
  // cookie's same-origin rule, docs/decisions/0024).
  if (options.issuer && url.origin === new URL(options.issuer).origin) fail(`redirect_uri ${uri} must not be on this authorization server`);
  if (url.protocol === "https:") return;
  if (url.protocol === "http:") {
    // RFC 8252 §7.3: native apps may use loopback IP literals (never "localhost").
    if (applicationType === "native" && isLoopbackIp(url.hostname)) return;
    if (options.allowPrivate && (isLoopbackIp(url.hostname) || url.hostname === "localhost")) return;
    fail(`redirect_uri ${uri} must use https`);
  }
  if (applicationType !== "native") fail(`redirect_uri ${uri}: web clients must use https redirect URIs`);
  // atproto: a native app's private-use scheme is its client_id host reversed, e.g. com.example.app:/callback
  const expectedScheme = clientUrl.hostname.split(".").reverse().join(".");
  if (url.protocol !== `${expectedScheme}:`) fail(`redirect_uri ${uri} must use the scheme ${expectedScheme}:`);
  // atproto: the scheme, a colon, then exactly one slash before the path (com.example.app:/callback).
  if (!uri.startsWith(`${expectedScheme}:/`) || uri.startsWith(`${expectedScheme}://`)) {
    fail(`redirect_uri ${uri} must have a single slash after the scheme`);
  }
}

/**
 * The keys a client may authenticate with (ES256 public signing keys, not
 * revoked), reduced to their public members, at most CLIENT_LIMITS.keys.
 */
export function usableSigningKeys(keys: readonly JWK[]): ClientJwk[] {
  const usable: ClientJwk[] = [];
  for (const key of keys as (JWK & { revoked?: unknown })[]) {
    if (usable.length === CLIENT_LIMITS.keys) break;
    if (key.kty !== "EC" || key.crv !== "P-256" || typeof key.x !== "string" || typeof key.y !== "string") continue;
    if ((key.alg !== undefined && key.alg !== "ES256") || (key.use !== undefined && key.use !== "sig") || key.d !== undefined || key.revoked !== undefined) continue;
    if (key.x.length > 64 || key.y.length > 64 || (key.kid !== undefined && (typeof key.kid !== "string" || key.kid.length > 256))) continue;
    usable.push({ kty: "EC", crv: "P-256", x: key.x, y: key.y, ...(key.kid !== undefined ? { kid: key.kid } : {}), ...(key.alg ? { alg: "ES256" } : {}), ...(key.use ? { use: "sig" } : {}) });
  }
  return usable;
}

export function isLoopbackIp(hostname: string): boolean {
  return hostname === "127.0.0.1" || hostname === "[::1]";
}

/**
 * RFC 8252 §7.3: for loopback IP redirect URIs "the authorization server MUST
 * allow any port to be specified at the time of the request". Everything
 * else is compared exactly (OAuth 2.1 §2.3.1).
 */
export function redirectUriMatches(declared: string, requested: string): boolean {
  if (declared === requested) return true;
  let a: URL;
  let b: URL;
  try {
    a = new URL(declared);
    b = new URL(requested);
  } catch {
    return false;
  }
  if (a.protocol !== "http:" || b.protocol !== "http:" || !isLoopbackIp(a.hostname)) return false;
  return a.hostname === b.hostname && a.pathname === b.pathname && a.search === b.search && !b.hash && !b.username && !b.password;
}

export function splitScope(scope: string | undefined): string[] {
  return (scope ?? "").split(" ").filter(Boolean);
}

function assertHttpsOrDev(uri: string, options: ValidationOptions, field: string): void {
  const url = new URL(uri);
  if (url.protocol !== "https:" && !(options.allowPrivate && url.protocol === "http:")) {
    throw new InvalidClientMetadataError(`Invalid client metadata: ${field} must use https`);
  }
}

function httpsOnly(uri: string | undefined): string | undefined {
  return uri && uri.startsWith("https://") ? uri : undefined;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
