import { createPublicKey, verify as verifySignature, type KeyObject } from "node:crypto";
import { InvalidDpopProofError, UseDpopNonceError } from "../errors/oauth-error.ts";
import type { ReplayStore } from "../replay/replay-store.ts";
import { sha256Base64url } from "../../util/crypto.ts";
import type { DpopNonces } from "./dpop-nonce.ts";

export type DpopCheck = {
  /** The DPoP header value, if any. */
  proof: string | null | undefined;
  method: string;
  /** The request URL as the client addressed it (the issuer's origin + path). */
  url: string;
  /** When presenting an access token (resource requests), its value: `ath` must match. */
  accessToken?: string;
};

/** `accessTokenHash`: the proof's ath, which is also the token's SHA-256 as stored (checked when a token was presented). */
export type VerifiedDpop = { jkt: string; jti: string; accessTokenHash?: string };

type PublicJwk = { kty: "EC"; crv: "P-256"; x: string; y: string };
type CachedKey = { key: KeyObject; jkt: string };

const MAX_CACHED_KEYS = 10_000;
const MAX_HEADER_LENGTH = 2048;
const MAX_JTI_LENGTH = 512;

/**
 * Verifies DPoP proofs per RFC 9449 §4.3 and docs/architecture.md, "DPoP". The compact JWS is
 * checked with node:crypto directly (one synchronous ES256 verification, no
 * WebCrypto round trip), and imported public keys are cached with their
 * thumbprints: the import is the slow part.
 */
export class DpopVerifier {
  private keys = new Map<string, CachedKey>();

  constructor(
    private readonly nonces: DpopNonces,
    private readonly replay: ReplayStore,
    private readonly options: { maxAgeMs: number; maxFutureMs: number; now?: () => number },
  ) {}

  async verify(check: DpopCheck): Promise<VerifiedDpop> {
    const proof = check.proof;
    if (!proof) throw new InvalidDpopProofError("DPoP proof required");
    const parts = proof.length > 8192 ? [] : proof.split(".");
    if (parts.length !== 3) throw new InvalidDpopProofError("DPoP proof is not a compact JWS");
    const [encodedHeader, encodedPayload, encodedSignature] = parts as [string, string, string];
    const { key, jkt } = this.keyOfHeader(encodedHeader);

    // ES256 signatures in JWS are the raw 64-byte r‖s form (RFC 7518 §3.4).
    const signature = Buffer.from(encodedSignature, "base64url");
    const signed = Buffer.from(proof.slice(0, encodedHeader.length + 1 + encodedPayload.length));
    if (signature.length !== 64 || !verifySignature("sha256", signed, { key, dsaEncoding: "ieee-p1363" }, signature)) {
      throw new InvalidDpopProofError("DPoP proof signature or format is invalid");
    }
    const payload = decodeJson(encodedPayload, "payload");

    const now = this.options.now?.() ?? Date.now();
    const jti = payload.jti;
    if (typeof jti !== "string" || jti.length === 0 || jti.length > MAX_JTI_LENGTH) {
      throw new InvalidDpopProofError("DPoP proof must have a jti");
    }
    // RFC 9449 §4.3 (8): "the htm claim matches the HTTP method of the current request"
    if (payload.htm !== check.method.toUpperCase()) throw new InvalidDpopProofError("DPoP htm does not match the request method");
    // RFC 9449 §4.3 (9): htu matches "ignoring any query and fragment parts"
    if (typeof payload.htu !== "string" || !sameHtu(payload.htu, check.url)) {
      throw new InvalidDpopProofError("DPoP htu does not match the request URL");
    }
    this.checkIssuedAt(payload.iat, now);
    const accessTokenHash = this.checkAccessTokenHash(payload.ath, check.accessToken);

    // docs/architecture.md, "DPoP": the nonce is checked before the jti is recorded, so a
    // client retrying after use_dpop_nonce is not mistaken for a replay.
    if (typeof payload.nonce !== "string" || !this.nonces.isValid(payload.nonce)) {
      throw new UseDpopNonceError(payload.nonce === undefined ? undefined : "DPoP nonce is stale or invalid");
    }
    const replayWindowEnd = now + this.options.maxAgeMs + this.options.maxFutureMs;
    if (!(await this.replay.recordUnique(`dpop:${jkt}`, jti, replayWindowEnd))) {
      throw new InvalidDpopProofError("DPoP proof replayed (jti already used)");
    }
    return { jkt, jti, accessTokenHash };
  }

  private readHeaderKey(header: Record<string, unknown>): PublicJwk {
    if (header.typ !== "dpop+jwt") throw new InvalidDpopProofError('DPoP proof typ must be "dpop+jwt"');
    // ES256 is the only algorithm accepted (the atproto OAuth profile; docs/architecture.md, "DPoP").
    if (header.alg !== "ES256") throw new InvalidDpopProofError("DPoP proof must be signed with ES256");
    // RFC 7515 §4.1.11: extensions we do not understand must not be ignored.
    if (header.crit !== undefined) throw new InvalidDpopProofError("DPoP proof header must not carry crit");
    const jwk = header.jwk as Record<string, unknown> | undefined;
    if (!jwk || typeof jwk !== "object") throw new InvalidDpopProofError("DPoP proof header must carry the public jwk");
    // RFC 9449 §4.3 (7): the jwk must not contain a private key.
    if ("d" in jwk) throw new InvalidDpopProofError("DPoP proof jwk must not contain private key material");
    if (jwk.kty !== "EC" || jwk.crv !== "P-256" || typeof jwk.x !== "string" || typeof jwk.y !== "string") {
      throw new InvalidDpopProofError("DPoP proof jwk must be a P-256 EC public key");
    }
    return { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y };
  }

  /**
   * The verified header's key, cached by the encoded header itself: a client
   * sends the same header (typ, alg, jwk) with every proof, and the checks
   * below depend on nothing else, so a cached header needs no decoding again.
   */
  private keyOfHeader(encodedHeader: string): CachedKey {
    const cached = this.keys.get(encodedHeader);
    if (cached) return cached;
    const jwk = this.readHeaderKey(decodeJson(encodedHeader, "header"));
    let entry: CachedKey;
    try {
      entry = { key: createPublicKey({ key: jwk, format: "jwk" }), jkt: jwkThumbprint(jwk) };
    } catch {
      throw new InvalidDpopProofError("DPoP proof jwk is not a valid public key");
    }
    // Bounded: at most MAX_CACHED_KEYS headers of at most MAX_HEADER_LENGTH characters (larger ones are checked, not kept).
    if (encodedHeader.length > MAX_HEADER_LENGTH) return entry;
    if (this.keys.size >= MAX_CACHED_KEYS) this.keys.clear();
    this.keys.set(encodedHeader, entry);
    return entry;
  }

  private checkIssuedAt(iat: unknown, now: number): void {
    if (typeof iat !== "number" || !Number.isFinite(iat)) throw new InvalidDpopProofError("DPoP proof must have a numeric iat");
    const issuedAt = iat * 1000;
    if (issuedAt < now - this.options.maxAgeMs) throw new InvalidDpopProofError("DPoP proof is too old (iat)");
    if (issuedAt > now + this.options.maxFutureMs) throw new InvalidDpopProofError("DPoP proof iat is in the future");
  }

  private checkAccessTokenHash(ath: unknown, accessToken: string | undefined): string | undefined {
    if (accessToken === undefined) return undefined;
    // RFC 9449 §4.3 (11): ath must equal the base64url SHA-256 of the access token.
    if (typeof ath !== "string") throw new InvalidDpopProofError("DPoP proof must carry ath when presenting an access token");
    const hash = sha256Base64url(accessToken);
    if (ath !== hash) throw new InvalidDpopProofError("DPoP ath does not match the access token");
    return hash;
  }
}

/** RFC 7638 thumbprint of an EC key: SHA-256 of the required members in lexical order. */
export function jwkThumbprint(jwk: PublicJwk): string {
  return sha256Base64url(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }));
}

function decodeJson(part: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
  } catch {
    throw new InvalidDpopProofError(`DPoP proof ${what} is malformed`);
  }
  if (!value || typeof value !== "object" || Array.isArray(value)) throw new InvalidDpopProofError(`DPoP proof ${what} is malformed`);
  return value as Record<string, unknown>;
}

/** Compares scheme, host (with port) and path; query and fragment are ignored. */
export function sameHtu(htu: string, requestUrl: string): boolean {
  // The usual case: the client wrote exactly the URL it called.
  if (htu === requestUrl) return true;
  let claimed: URL;
  try {
    claimed = new URL(htu);
  } catch {
    return false;
  }
  // RFC 9449 §4.2: htu is "The HTTP target URI ... without query and fragment parts"; a target URI has no userinfo
  // (RFC 9110 §4.2.4: "A sender MUST NOT generate the userinfo subcomponent"), so a proof naming credentials is refused.
  if (claimed.username || claimed.password) return false;
  const actual = new URL(requestUrl);
  return claimed.protocol === actual.protocol && claimed.host === actual.host && claimed.pathname === actual.pathname;
}
