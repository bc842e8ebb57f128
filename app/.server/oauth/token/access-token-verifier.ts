import { atResource, InvalidTokenError } from "../errors/oauth-error.ts";
import type { DpopVerifier } from "../dpop/dpop-verifier.ts";
import { sha256Base64url } from "../../util/crypto.ts";
import { MINUTE } from "../../util/time.ts";
import type { Grant, GrantStore } from "./grant-store.ts";
import type { AccountState } from "../../accounts/account-status.ts";

/** "Last used" on the account pages is kept to the minute: no write on most requests. */
const LAST_USED_RESOLUTION = MINUTE;

export type AuthenticatedRequest = {
  authorization: string | null;
  dpop: string | null;
  method: string;
  url: string;
};

export type TokenSubject = { grant: Grant; did: string; handle: string; scope: string; accountState: AccountState };

/**
 * Verifies a DPoP-bound access token presented to a protected resource
 * (userinfo, /xrpc): RFC 9449 §7 and docs/architecture.md, "DPoP".
 */
export class AccessTokenVerifier {
  constructor(
    private readonly grants: GrantStore,
    private readonly dpop: DpopVerifier,
    private readonly now: () => number = Date.now,
  ) {}

  async verify(request: AuthenticatedRequest): Promise<TokenSubject> {
    const header = request.authorization ?? "";
    const match = /^(\S+) +(\S+)$/.exec(header.trim());
    if (!match) throw new InvalidTokenError("Authorization: DPoP <access token> is required");
    const [, scheme, token] = match as unknown as [string, string, string];
    // RFC 9449 §7.2: a DPoP-bound token presented as a Bearer token is refused.
    if (scheme.toLowerCase() === "bearer") throw new InvalidTokenError("This access token is DPoP-bound: use the DPoP scheme with a proof");
    if (scheme.toLowerCase() !== "dpop") throw new InvalidTokenError("Unsupported authorization scheme; use DPoP");
    if (token.length > 256) throw new InvalidTokenError("Invalid access token");

    let proof;
    try {
      proof = await this.dpop.verify({ proof: request.dpop, method: request.method, url: request.url, accessToken: token });
    } catch (error) {
      // RFC 9449 §7.1: at a protected resource, proof and nonce problems are 401 with a DPoP challenge.
      throw atResource(error);
    }
    // The proof's checked ath is the token's SHA-256: the stored form of the token.
    const now = this.now();
    const owner = await this.grants.findAccessToken(proof.accessTokenHash ?? sha256Base64url(token), now);
    if (!owner) throw new InvalidTokenError("The access token is invalid, expired or revoked");
    // RFC 9449 §7.1: the proof's key must be the key the token is bound to.
    if (owner.grant.dpopJkt !== proof.jkt) throw new InvalidTokenError("The DPoP proof key does not match the token's key");
    if (now - owner.grant.lastUsedAt > LAST_USED_RESOLUTION) await this.grants.touchGrant(owner.grant.id, now);
    // The token's own scope: the grant's, or the narrower one asked for when it was refreshed.
    return { grant: owner.grant, did: owner.grant.accountDid, handle: owner.handle, scope: owner.scope, accountState: owner.accountState };
  }
}
