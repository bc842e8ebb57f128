import { z } from "zod";
import { InvalidGrantError, InvalidRequestError, InvalidScopeError, UnsupportedGrantTypeError } from "../errors/oauth-error.ts";
import {
  assertDistinctDpopKey,
  clientKeyOf,
  sameClientKey,
  type ClientAuthentication,
  type ClientManager,
} from "../client/client-manager.ts";
import type { OAuthClient } from "../client/client-metadata.ts";
import { randomToken, safeEqual, sha256Base64url } from "../../util/crypto.ts";
import { SECOND } from "../../util/time.ts";
import type { Grant, GrantStore, IssuedTokenHashes } from "./grant-store.ts";
import { narrowScope, parseItems } from "../scopes/permission-items.ts";
import { NO_METRICS, type Metrics } from "../../observability/metrics.ts";

const clientAuthFields = {
  client_id: z.string({ required_error: "client_id is required" }).min(1, "client_id is required").max(2048),
  client_assertion_type: z.string().max(256).optional(),
  client_assertion: z.string().max(8192).optional(),
};

/** Token request form (RFC 6749 §4.1.3 and §6, RFC 7636 §4.5, RFC 7523 §2.2). */
export const tokenRequestSchema = z.object({
  grant_type: z.string({ required_error: "grant_type is required" }).min(1).max(128),
  code: z.string().max(256).optional(),
  redirect_uri: z.string().max(2048).optional(),
  code_verifier: z.string().max(256).optional(),
  refresh_token: z.string().max(256).optional(),
  scope: z.string().max(4096).optional(),
  ...clientAuthFields,
});
export type TokenRequest = z.infer<typeof tokenRequestSchema>;

/**
 * Revocation request form (RFC 7009 §2.1). client_id is required: "the
 * authorization server ... verifies whether the token was issued to the
 * client making the revocation request", and a public client names itself
 * with client_id (RFC 6749 §2.3, §3.2.1).
 */
export const revocationRequestSchema = z.object({
  token: z.string({ required_error: "token is required" }).min(1, "token is required").max(4096),
  token_type_hint: z.string().max(64).optional(),
  ...clientAuthFields,
});
export type RevocationRequest = z.infer<typeof revocationRequestSchema>;

/** The token response: `sub` is required by atproto clients. */
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

export type TokenLifetimes = {
  accessTokenMs: number;
  refreshTokenMs: number;
  /** A grant's absolute lifetime for public clients (token_endpoint_auth_method none, loopback included)... */
  grantPublicMs: number;
  /** ...and for confidential (private_key_jwt) clients (docs/decisions/0010). */
  grantConfidentialMs: number;
};

export class TokenManager {
  constructor(
    private readonly clients: ClientManager,
    private readonly grants: GrantStore,
    private readonly lifetimes: TokenLifetimes,
    /** Counts the token responses (atrium_oauth_tokens_issued_total, docs/decisions/0014). */
    private readonly metrics: Pick<Metrics, "tokensIssued"> = NO_METRICS,
    private readonly now: () => number = Date.now,
  ) {}

  async exchange(input: TokenRequest, dpopJkt: string): Promise<TokenResponse> {
    const client = await this.clients.getClient(input.client_id);
    const auth = await this.clients.authenticate(client, input);
    assertDistinctDpopKey(auth, dpopJkt);
    switch (input.grant_type) {
      case "authorization_code": {
        const response = await this.redeemCode(input, client, auth, dpopJkt);
        this.metrics.tokensIssued("authorization_code");
        return response;
      }
      case "refresh_token": {
        const response = await this.refresh(input, client, auth, dpopJkt);
        this.metrics.tokensIssued("refresh_token");
        return response;
      }
      default:
        throw new UnsupportedGrantTypeError(`grant_type ${input.grant_type} is not supported; use authorization_code or refresh_token`);
    }
  }

  private async redeemCode(input: TokenRequest, client: OAuthClient, auth: ClientAuthentication, dpopJkt: string): Promise<TokenResponse> {
    if (!input.code) throw new InvalidRequestError("code is required");
    if (!input.code_verifier) throw new InvalidRequestError("code_verifier is required (PKCE)");
    const codeHash = sha256Base64url(input.code);
    const now = this.now();
    const code = await this.grants.findCode(codeHash, now);
    if (!code) throw new InvalidGrantError("Invalid or expired authorization code");
    if (code.usedAt !== null) {
      // RFC 6749 §4.1.2: a code used twice "SHOULD revoke ... all tokens previously issued based on that authorization code".
      if (code.grantId) await this.grants.revokeGrant(code.grantId);
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
    // The key that authenticated the pushed request must be the one that authenticates its redemption.
    if (!sameClientKey(code.clientKey, clientKeyOf(auth))) {
      throw new InvalidGrantError(
        code.clientKey === null
          ? "Client authentication method changed since the authorization request"
          : "The authorization request was authenticated with another client key than this client_assertion",
      );
    }

    const endsAt = now + (auth.method === "private_key_jwt" ? this.lifetimes.grantConfidentialMs : this.lifetimes.grantPublicMs);
    const grant: Grant = {
      id: randomToken("grt", 16),
      clientId: client.clientId,
      accountDid: code.accountDid,
      scope: code.scope,
      dpopJkt,
      clientKey: clientKeyOf(auth),
      createdAt: now,
      lastUsedAt: now,
      expiresAt: Math.min(now + this.lifetimes.refreshTokenMs, endsAt),
      endsAt,
      withdrawn: "",
    };
    const { hashes, response } = this.newTokens(now, grant, null);
    if (!(await this.grants.redeemCode(codeHash, now, grant, hashes))) {
      // Lost a race with another redemption of the same code: that is reuse too.
      const winner = await this.grants.findCode(codeHash, now);
      if (winner?.grantId) await this.grants.revokeGrant(winner.grantId);
      throw new InvalidGrantError("Authorization code was already used; the tokens issued from it are revoked");
    }
    return response;
  }

  private async refresh(input: TokenRequest, client: OAuthClient, auth: ClientAuthentication, dpopJkt: string): Promise<TokenResponse> {
    if (!input.refresh_token) throw new InvalidRequestError("refresh_token is required");
    const tokenHash = sha256Base64url(input.refresh_token);
    const now = this.now();
    const stored = await this.grants.findRefreshToken(tokenHash, now);
    if (!stored) throw new InvalidGrantError("Invalid, expired or revoked refresh token; the grant may have reached its lifetime");
    const { grant } = stored;
    if (stored.usedAt !== null) {
      // OAuth 2.1 §4.3.1 / RFC 9700 §4.14.2: reuse of a rotated refresh token revokes the grant.
      await this.grants.revokeGrant(grant.id);
      throw new InvalidGrantError("Refresh token was already used; the grant is revoked");
    }
    if (grant.clientId !== client.clientId) throw new InvalidGrantError("Refresh token was issued to another client");
    if (grant.dpopJkt !== dpopJkt) throw new InvalidGrantError("DPoP key does not match the key the tokens are bound to");
    await this.assertGrantKey(grant, auth);
    const accessScope = narrowedScope(input.scope, grant.scope);

    const { hashes, response } = this.newTokens(now, grant, accessScope);
    const rotated = await this.grants.rotateRefreshToken(tokenHash, grant.id, now, hashes);
    if (!rotated) {
      await this.grants.revokeGrant(grant.id);
      throw new InvalidGrantError("Refresh token was already used; the grant is revoked");
    }
    // RFC 6749 §5.1: the answer's scope is what the token may do: less what the person took back from the app, as the
    // rotation itself read it (docs/decisions/0053), so that a narrowing before the rotation is always named.
    return { ...response, scope: narrowScope(response.scope, parseItems(rotated.withdrawn)) };
  }

  /**
   * A confidential client's grant is bound to the key that authenticated it
   * (kid, algorithm and thumbprint): every refresh must be signed by that
   * very key. Another key the client also publishes is refused; once the
   * client stops publishing the bound key (or publishes other key material
   * under its kid), the grant ends.
   */
  private async assertGrantKey(grant: Grant, auth: ClientAuthentication): Promise<void> {
    const presented = clientKeyOf(auth);
    if (sameClientKey(grant.clientKey, presented)) return;
    if (grant.clientKey === null) throw new InvalidGrantError("Client authentication method changed since the grant was made");
    if (presented !== null && (await this.clients.publishesKey(grant.clientId, grant.clientKey))) {
      throw new InvalidGrantError(`This grant is bound to the client key ${grant.clientKey.kid}; sign the client_assertion with that key`);
    }
    await this.grants.revokeGrant(grant.id);
    throw new InvalidGrantError("The client key this grant is bound to is no longer published; sign in again");
  }

  /**
   * RFC 7009 §2.1: "The authorization server first validates the client
   * credentials (in case of a confidential client) and then verifies whether
   * the token was issued to the client making the revocation request. If
   * this validation fails, the request is refused". Unknown tokens are not an
   * error (§2.2). Either token of a grant ends the whole grant.
   */
  async revoke(input: RevocationRequest): Promise<void> {
    const grant = input.token.length > 256 ? undefined : await this.grants.findGrantByTokenHash(sha256Base64url(input.token));
    // Unknown: nothing to end. The client is not looked up first: that would fetch its metadata document for anyone
    // posting made-up tokens and client_ids, making this endpoint a relay for requests to arbitrary hosts.
    if (!grant) return;
    if (grant.clientId !== input.client_id) throw new InvalidGrantError("This token was not issued to this client");
    const auth = await this.clients.authenticate(await this.clients.getClient(input.client_id), input);
    if (!sameClientKey(grant.clientKey, clientKeyOf(auth))) throw new InvalidGrantError("This token is bound to another client key");
    await this.grants.revokeGrant(grant.id);
  }

  /** New tokens for `grant`, never outliving it. */
  private newTokens(now: number, grant: Grant, accessScope: string | null): { hashes: IssuedTokenHashes; response: TokenResponse } {
    const accessToken = randomToken("tok");
    const refreshToken = randomToken("ref");
    const accessExpiresAt = Math.min(now + this.lifetimes.accessTokenMs, grant.endsAt);
    const hashes: IssuedTokenHashes = {
      accessTokenHash: sha256Base64url(accessToken),
      accessExpiresAt,
      accessScope,
      refreshTokenHash: sha256Base64url(refreshToken),
      refreshExpiresAt: Math.min(now + this.lifetimes.refreshTokenMs, grant.endsAt),
    };
    return {
      hashes,
      response: {
        access_token: accessToken,
        token_type: "DPoP",
        expires_in: Math.floor((accessExpiresAt - now) / SECOND),
        refresh_token: refreshToken,
        scope: accessScope ?? grant.scope,
        sub: grant.accountDid,
      },
    };
  }
}

/**
 * RFC 6749 §6: a refresh may ask for a narrower scope ("MUST NOT include any
 * scope not originally granted ... if omitted is treated as equal to the
 * scope originally granted"). The narrower scope applies to the new access
 * token; the refresh token keeps the grant's. Returns null for the grant's own.
 */
export function narrowedScope(requested: string | undefined, granted: string): string | null {
  if (requested === undefined) return null;
  const grantedValues = new Set(granted.split(" ").filter(Boolean));
  const values = [...new Set(requested.split(" ").filter(Boolean))];
  const extra = values.filter((value) => !grantedValues.has(value));
  if (extra.length) throw new InvalidScopeError(`scope may only narrow what was granted; not granted: ${extra.join(" ")}`);
  // Every atproto token carries the atproto scope.
  if (!values.includes("atproto")) throw new InvalidScopeError('scope must include "atproto"');
  return values.length === grantedValues.size ? null : values.join(" ");
}
