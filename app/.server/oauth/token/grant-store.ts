import type { AccountState } from "../../accounts/account-status.ts";
import type { ClientKeyBinding } from "../client/client-manager.ts";

export type NewAuthorizationCode = {
  codeHash: string;
  clientId: string;
  accountDid: string;
  redirectUri: string;
  scope: string;
  codeChallenge: string;
  dpopJkt: string;
  clientKey: ClientKeyBinding | null;
  createdAt: number;
  expiresAt: number;
};

export type StoredAuthorizationCode = NewAuthorizationCode & { usedAt: number | null; grantId: string | null };

export type Grant = {
  id: string;
  clientId: string;
  accountDid: string;
  scope: string;
  dpopJkt: string;
  /** The client key a confidential client's grant is bound to: the same key must sign every refresh. */
  clientKey: ClientKeyBinding | null;
  createdAt: number;
  lastUsedAt: number;
  /** Slides with every refresh (the refresh token's lifetime), never past endsAt. */
  expiresAt: number;
  /** The grant's absolute end, fixed when it was made (docs/decisions/0010). */
  endsAt: number;
  /**
   * Permissions the account holder took back from the app since (space-separated, oauth/scopes/permission-items.ts):
   * refused to every token of the grant whatever its scope says (docs/decisions/0053). Empty for a new grant.
   */
  withdrawn: string;
};

export type IssuedTokenHashes = {
  accessTokenHash: string;
  accessExpiresAt: number;
  /** A narrower scope than the grant's for this access token (RFC 6749 §6), or null. */
  accessScope: string | null;
  refreshTokenHash: string;
  refreshExpiresAt: number;
};

/** What a rotation read of its grant in its own step. */
export type RotatedGrant = { withdrawn: string };

export type StoredRefreshToken = { tokenHash: string; grant: Grant; expiresAt: number; usedAt: number | null };

/** `scope`: what this access token may do (the grant's scope, or the narrower one asked for at refresh). */
/**
 * `accountState`: a deactivated account's token stays, its calls are refused (docs/decisions/0031); a taken-down
 * account has no tokens left, and one issued in a race with the takedown is refused too (docs/decisions/0051).
 */
export type AccessTokenOwner = { grant: Grant; expiresAt: number; handle: string; scope: string; accountState: AccountState };

export interface GrantStore {
  insertCode(code: NewAuthorizationCode): Promise<void>;
  /** Lazy expiry: an expired code is deleted and absent. */
  findCode(codeHash: string, now: number): Promise<StoredAuthorizationCode | undefined>;
  /**
   * Atomically marks the code used and creates its grant and first tokens.
   * False when another request used the code first (docs/architecture.md, "Tokens and codes").
   */
  redeemCode(codeHash: string, now: number, grant: Grant, tokens: IssuedTokenHashes): Promise<boolean>;
  findRefreshToken(tokenHash: string, now: number): Promise<StoredRefreshToken | undefined>;
  /**
   * Atomically spends the refresh token and issues the next pair; the grant's
   * earlier access tokens end. Undefined when the token was already spent; otherwise what the grant's holder had
   * taken back from the app as the rotation saw it, in the same step (a narrowing racing the refresh is either
   * before it, and named in its answer, or after it: docs/decisions/0053).
   */
  rotateRefreshToken(tokenHash: string, grantId: string, now: number, tokens: IssuedTokenHashes): Promise<RotatedGrant | undefined>;
  findAccessToken(tokenHash: string, now: number): Promise<AccessTokenOwner | undefined>;
  /** Ends a grant and every token it produced. */
  revokeGrant(grantId: string): Promise<void>;
  /** Live grants of an account, newest use first (for the account pages). */
  listGrants(accountDid: string, now: number): Promise<Grant[]>;
  /** Ends every grant an account gave a client, and the unredeemed codes that would become new ones; returns how many grants ended. */
  revokeClientGrants(accountDid: string, clientId: string): Promise<number>;
  /**
   * Ends every grant the account gave any client, and its codes not yet
   * redeemed (a code must not become a grant afterwards); returns how many
   * grants ended.
   */
  revokeAccountGrants(accountDid: string): Promise<number>;
  /** Records use of a grant by a resource request (at most once a minute: callers throttle). */
  touchGrant(grantId: string, now: number): Promise<void>;
  /** The grant an access or refresh token (live or spent) belongs to, if any. */
  findGrantByTokenHash(tokenHash: string): Promise<Grant | undefined>;
}
