import { z } from "zod";
import { InvalidGrantError, InvalidRequestError, InvalidClientError, UnsupportedGrantTypeError } from "../errors/oauth-error.ts";
import type { ClientAuthentication, ClientManager } from "../client/client-manager.ts";
import type { OAuthClient } from "../client/client-metadata.ts";
import { randomToken, safeEqual, sha256Base64url } from "../../util/crypto.ts";
import type { Grant, GrantStore, IssuedTokenHashes } from "./grant-store.ts";

/** Token request form (RFC 6749 §4.1.3 and §6, RFC 7636 §4.5, RFC 7523 §2.2). */
export const tokenRequestSchema = z.object({
  grant_type: z.string({ required_error: "grant_type is required" }).min(1).max(128),
  client_id: z.string({ required_error: "client_id is required" }).min(1).max(2048),
  code: z.string().max(256).optional(),
  redirect_uri: z.string().max(2048).optional(),
  code_verifier: z.string().max(256).optional(),
  refresh_token: z.string().max(256).optional(),
  client_assertion_type: z.string().max(256).optional(),
  client_assertion: z.string().max(8192).optional(),
});
export type TokenRequest = z.infer<typeof tokenRequestSchema>;

/** The token response (DESIGN §1): `sub` is required by atproto clients. */
export type TokenResponse = {
  access_token: string;
  token_type: "DPoP";
  expires_in: number;
  refresh_token: string;
  scope: string;
  sub: string;
};

/** RFC 7636 §4.1: 43 to 128 unreserved characters. */
const CODE_VERIFIER_PATTERN = /^[A-Za-z0-9\-._~]{43,128}$/;

type TokenLifetimes = { accessTokenMs: number; refreshTokenMs: number };

export class TokenManager {
  constructor(
    private readonly clients: ClientManager,
    private readonly grants: GrantStore,
    private readonly lifetimes: TokenLifetimes,
  ) {}

  async exchange(input: TokenRequest, dpopJkt: string): Promise<TokenResponse> {
    const client = await this.clients.getClient(input.client_id);
    const auth = await this.clients.authenticate(client, input);
    switch (input.grant_type) {
      case "authorization_code":
        return this.redeemCode(input, client, auth, dpopJkt);
      case "refresh_token":
        return this.refresh(input, client, auth, dpopJkt);
      default:
        throw new UnsupportedGrantTypeError(`grant_type ${input.grant_type} is not supported; use authorization_code or refresh_token`);
    }
  }

  private redeemCode(input: TokenRequest, client: OAuthClient, auth: ClientAuthentication, dpopJkt: string): TokenResponse {
    if (!input.code) throw new InvalidRequestError("code is required");
    if (!input.code_verifier) throw new InvalidRequestError("code_verifier is required (PKCE)");
    const codeHash = sha256Base64url(input.code);
    const now = Date.now();
    const code = this.grants.findCode(codeHash, now);
    if (!code) throw new InvalidGrantError("Invalid or expired authorization code");
    if (code.usedAt !== null) {
      // RFC 6749 §4.1.2: a code used twice "SHOULD revoke ... all tokens previously issued based on that authorization code".
      if (code.grantId) this.grants.revokeGrant(code.grantId);
      throw new InvalidGrantError("Authorization code was already used; the tokens issued from it are revoked");
    }
    if (code.clientId !== client.clientId) throw new InvalidGrantError("Authorization code was issued to another client");
    // RFC 6749 §4.1.3: redirect_uri must be identical to the one in the authorization request.
    if (input.redirect_uri !== undefined && input.redirect_uri !== code.redirectUri) {
      throw new InvalidGrantError("redirect_uri does not match the authorization request");
    }
    if (input.redirect_uri === undefined) throw new InvalidRequestError("redirect_uri is required");
    // RFC 9449 §10: the key bound at PAR must be the key proving possession now.
    if (code.dpopJkt !== dpopJkt) throw new InvalidGrantError("DPoP key does not match the key used at the authorization request");
    if (!CODE_VERIFIER_PATTERN.test(input.code_verifier)) throw new InvalidGrantError("code_verifier is malformed");
    // RFC 7636 §4.6: BASE64URL(SHA256(code_verifier)) == code_challenge.
    if (!safeEqual(sha256Base64url(input.code_verifier), code.codeChallenge)) throw new InvalidGrantError("code_verifier does not match code_challenge");
    if ((code.clientKeyId === null) !== (auth.method === "none")) throw new InvalidClientError("Client authentication method changed since the authorization request");

    const grant: Grant = {
      id: randomToken("grt", 16),
      clientId: client.clientId,
      accountDid: code.accountDid,
      scope: code.scope,
      dpopJkt,
      clientKeyId: auth.method === "private_key_jwt" ? auth.kid : null,
      createdAt: now,
      lastUsedAt: now,
      expiresAt: now + this.lifetimes.refreshTokenMs,
    };
    const { hashes, response } = this.newTokens(now, grant);
    if (!this.grants.redeemCode(codeHash, now, grant, hashes)) {
      // Lost a race with another redemption of the same code: that is reuse too.
      const winner = this.grants.findCode(codeHash, now);
      if (winner?.grantId) this.grants.revokeGrant(winner.grantId);
      throw new InvalidGrantError("Authorization code was already used; the tokens issued from it are revoked");
    }
    return response;
  }

  private async refresh(input: TokenRequest, client: OAuthClient, auth: ClientAuthentication, dpopJkt: string): Promise<TokenResponse> {
    if (!input.refresh_token) throw new InvalidRequestError("refresh_token is required");
    const tokenHash = sha256Base64url(input.refresh_token);
    const now = Date.now();
    const stored = this.grants.findRefreshToken(tokenHash, now);
    if (!stored) throw new InvalidGrantError("Invalid, expired or revoked refresh token");
    const { grant } = stored;
    if (stored.usedAt !== null) {
      // OAuth 2.1 §4.3.1 / RFC 9700 §4.14.2: reuse of a rotated refresh token revokes the grant.
      this.grants.revokeGrant(grant.id);
      throw new InvalidGrantError("Refresh token was already used; the grant is revoked");
    }
    if (grant.clientId !== client.clientId) throw new InvalidGrantError("Refresh token was issued to another client");
    if (grant.dpopJkt !== dpopJkt) throw new InvalidGrantError("DPoP key does not match the key the tokens are bound to");
    if (grant.clientKeyId !== null) {
      if (auth.method !== "private_key_jwt") throw new InvalidClientError("This client must authenticate with private_key_jwt");
      // The grant is bound to the key that authenticated it: it ends when the client withdraws that key.
      if (!(await this.clients.hasKey(client.clientId, grant.clientKeyId))) {
        this.grants.revokeGrant(grant.id);
        throw new InvalidGrantError("The client key this grant is bound to is no longer published; sign in again");
      }
    }

    const { hashes, response } = this.newTokens(now, grant);
    if (!this.grants.rotateRefreshToken(tokenHash, grant.id, now, hashes)) {
      this.grants.revokeGrant(grant.id);
      throw new InvalidGrantError("Refresh token was already used; the grant is revoked");
    }
    return response;
  }

  /** RFC 7009 §2.2: unknown tokens are not an error. Either token ends the whole grant. */
  revoke(token: string): void {
    if (token.length === 0 || token.length > 256) return;
    this.grants.revokeByTokenHash(sha256Base64url(token));
  }

  private newTokens(now: number, grant: Grant): { hashes: IssuedTokenHashes; response: TokenResponse } {
    const accessToken = randomToken("tok");
    const refreshToken = randomToken("ref");
    const hashes: IssuedTokenHashes = {
      accessTokenHash: sha256Base64url(accessToken),
      accessExpiresAt: now + this.lifetimes.accessTokenMs,
      refreshTokenHash: sha256Base64url(refreshToken),
      refreshExpiresAt: now + this.lifetimes.refreshTokenMs,
    };
    return {
      hashes,
      response: {
        access_token: accessToken,
        token_type: "DPoP",
        expires_in: Math.floor(this.lifetimes.accessTokenMs / 1000),
        refresh_token: refreshToken,
        scope: grant.scope,
        sub: grant.accountDid,
      },
    };
  }
}
