import { createHmac, createSecretKey, hkdfSync, randomBytes, timingSafeEqual, type KeyObject } from "node:crypto";
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
/**
 * A taken-down account's own session (createSession with allowTakendown, docs/decisions/0051): it may only take the
 * account's data away, appeal and move to another server (xrpc/router.ts mayCallWhileTakenDown).
 */
export const TAKENDOWN_ACCESS = "com.atproto.takendown";

export type AccessScope = typeof FULL_ACCESS | typeof APP_PASSWORD_ACCESS | typeof PRIVILEGED_APP_PASSWORD_ACCESS | typeof TAKENDOWN_ACCESS;

const ACCESS_SCOPES: readonly string[] = [FULL_ACCESS, APP_PASSWORD_ACCESS, PRIVILEGED_APP_PASSWORD_ACCESS, TAKENDOWN_ACCESS];

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

/**
 * A JWS in compact form (RFC 7515 §7.1) with HS256 (RFC 7518 §3.2), written with node:crypto: every call of a password
 * session verifies one, and jose's verification (a WebCrypto key import per call) was a third of a getSession's CPU
 * (docs/decisions/0047). Its tests check that jose reads these tokens and that these checks read jose's.
 */
export async function signSessionJwt(keys: SessionJwtKeys, kind: TokenKind, claims: { sub: string; aud: string; scope: string; jti: string; issuedAt: number; expiresAt: number }): Promise<string> {
  const header = encodeJson({ typ: TYP[kind], alg: "HS256" });
  const payload = encodeJson({
    scope: claims.scope,
    sub: claims.sub,
    aud: claims.aud,
    jti: claims.jti,
    iat: Math.floor(claims.issuedAt / SECOND),
    exp: Math.floor(claims.expiresAt / SECOND),
  });
  return `${header}.${payload}.${mac(keys, `${header}.${payload}`).toString("base64url")}`;
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
 * does: HS256 only, the `typ` of the kind, no critical header extension (RFC 7515 §4.1.11), the signature, the
 * audience, `nbf` and `exp`, string `sub` (a DID) and `jti`, no `cnf` (a proof-of-possession token is no bearer token)
 * and no `lxm` (a service token is not a session).
 */
export async function verifySessionJwt(keys: SessionJwtKeys, kind: TokenKind, token: string, options: { aud: string; now: number; ignoreExpiry?: boolean }): Promise<TokenClaims> {
  const parts = token.split(".");
  if (parts.length !== 3 || !parts.every((part) => BASE64URL.test(part))) throw new SessionJwtRefused("invalid");
  const [encodedHeader, encodedPayload, encodedSignature] = parts as [string, string, string];
  const header = decodeJson(encodedHeader);
  if (header.alg !== "HS256" || header.typ !== TYP[kind] || "crit" in header) throw new SessionJwtRefused("invalid");
  const signature = Buffer.from(encodedSignature, "base64url");
  const expected = mac(keys, `${encodedHeader}.${encodedPayload}`);
  if (signature.length !== expected.length || !timingSafeEqual(signature, expected)) throw new SessionJwtRefused("invalid");
  const { sub, aud, scope, jti, iat, exp, nbf, cnf, lxm } = decodeJson(encodedPayload);
  const nowSeconds = options.now / SECOND;
  if (typeof exp !== "number" || typeof iat !== "number" || (nbf !== undefined && (typeof nbf !== "number" || nbf > nowSeconds))) throw new SessionJwtRefused("invalid");
  if (aud !== options.aud && !(Array.isArray(aud) && aud.includes(options.aud))) throw new SessionJwtRefused("invalid");
  if (cnf !== undefined || lxm !== undefined) throw new SessionJwtRefused("invalid");
  if (typeof sub !== "string" || !sub.startsWith("did:") || typeof jti !== "string" || jti.length > 64) throw new SessionJwtRefused("invalid");
  if (kind === "access" ? !isAccessScope(scope) : scope !== REFRESH_SCOPE) throw new SessionJwtRefused("invalid");
  if (!options.ignoreExpiry && exp <= nowSeconds) throw new SessionJwtRefused("expired");
  return { sub, aud: options.aud, scope: scope as string, jti, iat, exp };
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;

function mac(keys: SessionJwtKeys, signingInput: string): Buffer {
  return createHmac("sha256", keys.signing).update(signingInput).digest();
}

function encodeJson(value: Record<string, unknown>): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

/** A part of the token as the JSON object it must be; anything else is an invalid token. */
function decodeJson(part: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
  } catch {
    throw new SessionJwtRefused("invalid");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new SessionJwtRefused("invalid");
  return value as Record<string, unknown>;
}

/** Whether a bearer token has the shape of a JWT (three base64url parts): a password session's, not an OAuth token. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}
