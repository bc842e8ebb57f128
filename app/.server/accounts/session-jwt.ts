import { createHmac, createSecretKey, hkdfSync, randomBytes, type KeyObject } from "node:crypto";
import { errors as joseErrors, jwtVerify, SignJWT } from "jose";
import { SECOND } from "../util/time.ts";

/**
 * The JWTs of password sessions (com.atproto.server.createSession, docs/decisions/0047), as the reference PDS issues
 * them: HS256 with a server key, `typ` `at+jwt` (RFC 9068) for access and `refresh+jwt` for refresh, `sub` the
 * account's DID, `aud` this server's DID, `scope` one of the reference's auth scopes, so that `@atproto/api` and the
 * apps built on it read them as they read the reference's. Each carries a random `jti` whose SHA-256 is the only thing
 * stored: the signature keeps garbage away from the database, the stored row is what makes a token live.
 */

/** The reference's auth scopes (its auth-scope.ts): what a password session's access token may do. */
export const FULL_ACCESS = "com.atproto.access";
export const APP_PASSWORD_ACCESS = "com.atproto.appPass";
export const PRIVILEGED_APP_PASSWORD_ACCESS = "com.atproto.appPassPrivileged";
export const REFRESH_SCOPE = "com.atproto.refresh";

export type AccessScope = typeof FULL_ACCESS | typeof APP_PASSWORD_ACCESS | typeof PRIVILEGED_APP_PASSWORD_ACCESS;

const ACCESS_SCOPES: readonly string[] = [FULL_ACCESS, APP_PASSWORD_ACCESS, PRIVILEGED_APP_PASSWORD_ACCESS];

export function isAccessScope(value: unknown): value is AccessScope {
  return typeof value === "string" && ACCESS_SCOPES.includes(value);
}

/** The keys of password sessions, each derived from the server secret with a label of its own (RFC 5869). */
export type SessionJwtKeys = {
  /** Signs and verifies the JWTs (HS256). */
  signing: KeyObject;
  /** Names a refresh token's successor from its own jti (`successorJti`). */
  chain: Buffer;
};

export function sessionJwtKeys(secret: string): SessionJwtKeys {
  const derive = (label: string) => Buffer.from(hkdfSync("sha256", secret, Buffer.alloc(0), label, 32));
  return { signing: createSecretKey(derive("atrium password session jwt v1")), chain: derive("atrium password session refresh chain v1") };
}

/** A new token id: 256 random bits. */
export function newJti(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * The jti of the refresh token that follows `jti`. Derived, not drawn: a retried refresh within the grace gets the
 * very token the first one got (the reference hands out the same id), while the database keeps only hashes. Nobody
 * without the presented token can name its successor, the key being derived from the server secret.
 */
export function successorJti(keys: SessionJwtKeys, jti: string): string {
  return createHmac("sha256", keys.chain).update(jti).digest("base64url");
}

export type TokenClaims = { sub: string; aud: string; scope: string; jti: string; iat: number; exp: number };

type TokenKind = "access" | "refresh";
const TYP: Record<TokenKind, string> = { access: "at+jwt", refresh: "refresh+jwt" };

export async function signSessionJwt(keys: SessionJwtKeys, kind: TokenKind, claims: { sub: string; aud: string; scope: string; jti: string; issuedAt: number; expiresAt: number }): Promise<string> {
  return new SignJWT({ scope: claims.scope })
    .setProtectedHeader({ typ: TYP[kind], alg: "HS256" })
    .setSubject(claims.sub)
    .setAudience(claims.aud)
    .setJti(claims.jti)
    .setIssuedAt(Math.floor(claims.issuedAt / SECOND))
    .setExpirationTime(Math.floor(claims.expiresAt / SECOND))
    .sign(keys.signing);
}

/** Why a presented token is refused: it expired (the client should refresh), or it is no token of this kind of ours. */
export type JwtRefusal = "expired" | "invalid";

export class SessionJwtRefused extends Error {
  constructor(readonly reason: JwtRefusal) {
    super(reason === "expired" ? "Token has expired" : "Token could not be verified");
  }
}

/**
 * The claims of a token of `kind` signed with our key for `aud`, or SessionJwtRefused. `ignoreExpiry`: deleteSession
 * ends a session with an expired refresh token too, as the reference allows. Checked as the reference's verifier
 * does: HS256 only, the `typ` of the kind, the audience, string `sub` (a DID) and `jti`, no `cnf` (a proof-of-possession
 * token is no bearer token) and no `lxm` (a service token is not a session).
 */
export async function verifySessionJwt(keys: SessionJwtKeys, kind: TokenKind, token: string, options: { aud: string; now: number; ignoreExpiry?: boolean }): Promise<TokenClaims> {
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(token, keys.signing, {
      algorithms: ["HS256"],
      typ: TYP[kind],
      audience: options.aud,
      currentDate: new Date(options.now),
      clockTolerance: options.ignoreExpiry ? Number.MAX_SAFE_INTEGER : 0,
    }));
  } catch (error) {
    throw new SessionJwtRefused(error instanceof joseErrors.JWTExpired ? "expired" : "invalid");
  }
  const { sub, aud, scope, jti, iat, exp, cnf, lxm } = payload;
  if (cnf !== undefined || lxm !== undefined) throw new SessionJwtRefused("invalid");
  if (typeof sub !== "string" || !sub.startsWith("did:") || typeof jti !== "string" || jti.length > 64) throw new SessionJwtRefused("invalid");
  if (typeof scope !== "string" || typeof iat !== "number" || typeof exp !== "number") throw new SessionJwtRefused("invalid");
  if (kind === "access" ? !isAccessScope(scope) : scope !== REFRESH_SCOPE) throw new SessionJwtRefused("invalid");
  return { sub, aud: aud as string, scope, jti, iat, exp };
}

/** Whether a bearer token has the shape of a JWT (three base64url parts): a password session's, not an OAuth token. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}
