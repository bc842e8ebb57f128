import { AtriumError, type AtriumErrorOptions } from "../../errors/atrium-error.ts";

/**
 * The OAuth errors of the provider core, in the one error model
 * (errors/atrium-error.ts). Each class names the spec section that defines
 * its code; the renderers (http/error-answers.ts) write them.
 */

export type OAuthErrorCode =
  | "invalid_request"
  | "invalid_client"
  | "invalid_grant"
  | "unauthorized_client"
  | "unsupported_grant_type"
  | "unsupported_response_type"
  | "invalid_scope"
  | "access_denied"
  | "invalid_dpop_proof"
  | "use_dpop_nonce"
  | "invalid_token"
  | "insufficient_scope"
  | "invalid_client_metadata"
  | "invalid_redirect_uri"
  | "invalid_authorization_request"
  | "login_required"
  | "consent_required"
  | "server_error"
  | "temporarily_unavailable";

export class OAuthError extends AtriumError {
  declare readonly code: OAuthErrorCode;

  constructor(code: OAuthErrorCode, description: string, status = 400, options: Omit<AtriumErrorOptions, "status"> = {}) {
    super(code, description, { ...options, status });
  }
}

/** RFC 6749 §5.2: malformed request, missing or duplicated parameter. */
export class InvalidRequestError extends OAuthError {
  constructor(description: string, options?: { cause?: unknown }) {
    super("invalid_request", description, 400, options);
  }
}

/**
 * RFC 6749 §5.2: client authentication failed. 400, as the reference atproto
 * provider answers: a 401 "MUST ... include the WWW-Authenticate response
 * header field" (RFC 9110 §15.5.2), which names an HTTP authentication scheme,
 * and private_key_jwt clients authenticate in the body, not with one.
 */
export class InvalidClientError extends OAuthError {
  constructor(description: string, options?: { cause?: unknown }) {
    super("invalid_client", description, 400, options);
  }
}

/** RFC 7591 §3.2.2 / atproto: the client's metadata document is unusable. */
export class InvalidClientMetadataError extends OAuthError {
  constructor(description: string, options?: { cause?: unknown }) {
    super("invalid_client_metadata", description, 400, options);
  }
}

/** RFC 6749 §5.2: code, refresh token or verifier invalid, expired, revoked or mismatched. */
export class InvalidGrantError extends OAuthError {
  constructor(description: string) {
    super("invalid_grant", description);
  }
}

/** RFC 6749 §5.2. */
export class UnsupportedGrantTypeError extends OAuthError {
  constructor(description: string) {
    super("unsupported_grant_type", description);
  }
}

/** RFC 6749 §4.1.2.1. */
export class UnsupportedResponseTypeError extends OAuthError {
  constructor(description: string) {
    super("unsupported_response_type", description);
  }
}

/** RFC 6749 §5.2. */
export class InvalidScopeError extends OAuthError {
  constructor(description: string) {
    super("invalid_scope", description);
  }
}

/** RFC 9449 §5: the DPoP proof is missing or invalid (at a protected resource: `atResource`). */
export class InvalidDpopProofError extends OAuthError {
  constructor(description: string) {
    super("invalid_dpop_proof", description);
  }
}

/** RFC 9449 §8: the proof lacks the current server nonce; the answer carries one. */
export class UseDpopNonceError extends OAuthError {
  constructor(description = "Authorization server requires nonce in DPoP proof") {
    super("use_dpop_nonce", description);
  }
}

/**
 * RFC 9449 §7.1 and RFC 6750 §3: a protected resource answers a token
 * problem with 401 and a DPoP challenge naming the error, and a missing
 * permission with 403 and the same kind of challenge.
 */
export function dpopChallenge(code: string, description: string): string {
  const quoted = description.replace(/["\\]/g, "'");
  return `DPoP error="${code}", error_description="${quoted}", algs="ES256"`;
}

/** RFC 6750 §3.1: the access token is missing, expired, revoked or malformed (401, with its challenge). */
export class InvalidTokenError extends OAuthError {
  constructor(description: string) {
    super("invalid_token", description, 401, { challenge: dpopChallenge("invalid_token", description), xrpcName: "InvalidToken" });
  }
}

/** RFC 6750 §3.1: the token lacks a permission the request needs (403, with its challenge). */
export class InsufficientScopeError extends OAuthError {
  constructor(description: string) {
    super("insufficient_scope", description, 403, { challenge: dpopChallenge("insufficient_scope", description), xrpcName: "InsufficientScope" });
  }
}

/** XRPC names of the proof errors when a protected resource answers them. */
const RESOURCE_XRPC_NAMES: Partial<Record<OAuthErrorCode, string>> = { invalid_dpop_proof: "InvalidDpopProof", use_dpop_nonce: "UseDpopNonce" };

/**
 * The error as a protected resource answers it (RFC 9449 §7.1): a DPoP proof
 * or nonce problem is 401 with a challenge there, where the authorization
 * server answers 400. The one place that rule lives.
 */
export function atResource(error: unknown): unknown {
  if (!(error instanceof OAuthError) || !(error.code in RESOURCE_XRPC_NAMES)) return error;
  return new OAuthError(error.code, error.description, 401, { challenge: dpopChallenge(error.code, error.description), xrpcName: RESOURCE_XRPC_NAMES[error.code] });
}

/** A client or person reached an endpoint faster than its limit allows (429 with Retry-After). */
export class TooManyRequestsError extends OAuthError {
  declare readonly retryAfterSeconds: number;

  /** `words`: where a screen finds this refusal in the person's language (docs/decisions/0019). */
  constructor(description: string, retryAfterSeconds: number, words: Pick<AtriumErrorOptions, "messageKey" | "messageValues"> = {}) {
    super("temporarily_unavailable", description, 429, { retryAfterSeconds, xrpcName: "RateLimitExceeded", title: "Too many attempts", titleKey: "errors:page.titles.429", ...words });
  }
}
