import { createHash, randomBytes, randomUUID } from "node:crypto";
import { exportJWK, generateKeyPair, SignJWT, type JWK } from "jose";

/**
 * A small atproto OAuth client: DPoP proofs (with server-nonce retry), PKCE,
 * PAR, code exchange, refresh, revoke and userinfo. Used by the demo
 * (`npm run demo`), the integration tests and the benchmarks.
 */

export type DpopKey = { privateKey: CryptoKey; publicJwk: JWK };

export async function generateDpopKey(): Promise<DpopKey> {
  const { privateKey, publicKey } = await generateKeyPair("ES256", { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { privateKey: privateKey as CryptoKey, publicJwk: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y } };
}

export type ProofOptions = {
  method: string;
  url: string;
  nonce?: string;
  accessToken?: string;
  /** Overrides for tests that try broken proofs. */
  iat?: number;
  jti?: string;
  htu?: string;
  htm?: string;
};

export async function createDpopProof(key: DpopKey, options: ProofOptions): Promise<string> {
  const claims: Record<string, unknown> = {
    jti: options.jti ?? randomUUID(),
    htm: options.htm ?? options.method,
    htu: options.htu ?? options.url,
  };
  if (options.nonce) claims.nonce = options.nonce;
  if (options.accessToken) claims.ath = sha256Base64url(options.accessToken);
  return new SignJWT(claims)
    .setProtectedHeader({ typ: "dpop+jwt", alg: "ES256", jwk: key.publicJwk })
    .setIssuedAt(options.iat ?? Math.floor(Date.now() / 1000))
    .sign(key.privateKey);
}

export function sha256Base64url(value: string): string {
  return createHash("sha256").update(value).digest("base64url");
}

export function createPkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: sha256Base64url(verifier) };
}

export type ServerMetadata = {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  pushed_authorization_request_endpoint: string;
  revocation_endpoint: string;
  userinfo_endpoint: string;
};

export type TokenSet = {
  access_token: string;
  refresh_token: string;
  token_type: string;
  expires_in: number;
  scope: string;
  sub: string;
};

export type HttpResult<T = unknown> = { status: number; body: T; headers: Headers };

/** Extra form fields for each request, e.g. a confidential client's assertion. */
export type ExtraParams = () => Promise<Record<string, string>> | Record<string, string>;

export class DpopClient {
  /** The last DPoP-Nonce the server sent. */
  nonce: string | undefined;

  constructor(
    readonly issuer: string,
    readonly key: DpopKey,
    readonly clientId: string,
    private readonly extraParams: ExtraParams = () => ({}),
  ) {}

  async metadata(): Promise<ServerMetadata> {
    const response = await fetch(`${this.issuer}/.well-known/oauth-authorization-server`);
    return (await response.json()) as ServerMetadata;
  }

  /**
   * POSTs a form with a DPoP proof; on use_dpop_nonce, retries once with the
   * nonce the server sent (RFC 9449 §8).
   */
  async postForm<T>(url: string, form: Record<string, string>, options: { accessToken?: string } = {}): Promise<HttpResult<T>> {
    let result: HttpResult<T> | undefined;
    for (let attempt = 0; attempt < 2; attempt++) {
      const body = new URLSearchParams({ ...form, ...(await this.extraParams()) });
      const proof = await createDpopProof(this.key, { method: "POST", url, nonce: this.nonce, accessToken: options.accessToken });
      const response = await fetch(url, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", DPoP: proof },
        body,
      });
      result = await readResult<T>(response);
      this.nonce = response.headers.get("DPoP-Nonce") ?? this.nonce;
      if (!isNonceChallenge(result)) return result;
    }
    return result!;
  }

  async pushAuthorizationRequest(params: Record<string, string>): Promise<HttpResult<{ request_uri: string; expires_in: number }>> {
    return this.postForm(`${this.issuer}/oauth/par`, { client_id: this.clientId, response_type: "code", ...params });
  }

  authorizeUrl(requestUri: string): string {
    const url = new URL(`${this.issuer}/oauth/authorize`);
    url.searchParams.set("client_id", this.clientId);
    url.searchParams.set("request_uri", requestUri);
    return url.href;
  }

  async exchangeCode(code: string, verifier: string, redirectUri: string): Promise<HttpResult<TokenSet>> {
    return this.postForm(`${this.issuer}/oauth/token`, {
      grant_type: "authorization_code",
      client_id: this.clientId,
      code,
      code_verifier: verifier,
      redirect_uri: redirectUri,
    });
  }

  async refresh(refreshToken: string): Promise<HttpResult<TokenSet>> {
    return this.postForm(`${this.issuer}/oauth/token`, {
      grant_type: "refresh_token",
      client_id: this.clientId,
      refresh_token: refreshToken,
    });
  }

  /** RFC 7009 revocation as a generic client sends it: no DPoP proof; the client's own credentials (client_id, and a confidential client's assertion). */
  async revoke(token: string): Promise<HttpResult> {
    const response = await fetch(`${this.issuer}/oauth/revoke`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token, client_id: this.clientId, ...(await this.extraParams()) }),
    });
    return readResult(response);
  }

  /**
   * Calls a protected resource with `Authorization: DPoP` and a proof
   * carrying ath; retries once on a use_dpop_nonce challenge.
   */
  async requestWithToken<T>(
    method: string,
    url: string,
    accessToken: string,
    init: { body?: BodyInit; headers?: Record<string, string> } = {},
  ): Promise<HttpResult<T>> {
    let result: HttpResult<T> | undefined;
    for (let attempt = 0; attempt < 2; attempt++) {
      const proof = await createDpopProof(this.key, { method, url, nonce: this.nonce, accessToken });
      const response = await fetch(url, {
        method,
        body: init.body,
        headers: { ...init.headers, Authorization: `DPoP ${accessToken}`, DPoP: proof },
      });
      result = await readResult<T>(response);
      this.nonce = response.headers.get("DPoP-Nonce") ?? this.nonce;
      if (!isNonceChallenge(result)) return result;
    }
    return result!;
  }

  async getWithToken<T>(url: string, accessToken: string): Promise<HttpResult<T>> {
    return this.requestWithToken<T>("GET", url, accessToken);
  }

  /** An XRPC query (GET with params) or procedure (POST with a JSON body) on this server. */
  async xrpc<T = unknown>(
    accessToken: string,
    nsid: string,
    options: { params?: Record<string, string>; json?: unknown; headers?: Record<string, string> } = {},
  ): Promise<HttpResult<T>> {
    const url = new URL(`${this.issuer}/xrpc/${nsid}`);
    for (const [name, value] of Object.entries(options.params ?? {})) url.searchParams.set(name, value);
    if (options.json === undefined) return this.requestWithToken<T>("GET", url.href, accessToken, { headers: options.headers });
    return this.requestWithToken<T>("POST", url.href, accessToken, {
      body: JSON.stringify(options.json),
      headers: { "Content-Type": "application/json", ...options.headers },
    });
  }

  async userinfo(accessToken: string): Promise<HttpResult<{ sub: string; preferred_username: string }>> {
    return this.getWithToken(`${this.issuer}/oauth/userinfo`, accessToken);
  }
}

function isNonceChallenge(result: HttpResult): boolean {
  const body = result.body as { error?: string } | undefined;
  if (body?.error === "use_dpop_nonce") return true;
  return /error="use_dpop_nonce"/.test(result.headers.get("WWW-Authenticate") ?? "");
}

export async function readResult<T>(response: Response): Promise<HttpResult<T>> {
  const text = await response.text();
  let body: unknown = text;
  if (text && (response.headers.get("content-type") ?? "").includes("json")) body = JSON.parse(text);
  return { status: response.status, body: body as T, headers: response.headers };
}
