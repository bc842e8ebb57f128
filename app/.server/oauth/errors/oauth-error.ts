/**
 * One error hierarchy for the provider. Each class names the spec section
 * that defines its code; `toErrorResponse` (errors/error-response.ts) is the
 * only place that turns them into HTTP responses.
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

export class OAuthError extends Error {
  constructor(
    readonly code: OAuthErrorCode,
    readonly description: string,
    readonly status = 400,
    options?: { cause?: unknown },
  ) {
    super(description, options);
    this.name = new.target.name;
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
    super("invalid_grant", description, 400);
  }
}

/** RFC 6749 §5.2. */
export class UnsupportedGrantTypeError extends OAuthError {
  constructor(description: string) {
    super("unsupported_grant_type", description, 400);
  }
}

/** RFC 6749 §4.1.2.1. */
export class UnsupportedResponseTypeError extends OAuthError {
  constructor(description: string) {
    super("unsupported_response_type", description, 400);
  }
}

/** RFC 6749 §5.2. */
export class InvalidScopeError extends OAuthError {
  constructor(description: string) {
    super("invalid_scope", description, 400);
  }
}

/** RFC 9449 §5 / §7.1: the DPoP proof is missing or invalid. */
export class InvalidDpopProofError extends OAuthError {
  constructor(description: string) {
    super("invalid_dpop_proof", description, 400);
  }
}

/** RFC 9449 §8: the proof lacks the current server nonce; the response carries one. */
export class UseDpopNonceError extends OAuthError {
  constructor(description = "Authorization server requires nonce in DPoP proof") {
    super("use_dpop_nonce", description, 400);
  }
}

/** RFC 6750 §3.1: the access token is missing, expired, revoked or malformed (401). */
export class InvalidTokenError extends OAuthError {
  constructor(description: string) {
    super("invalid_token", description, 401);
  }
}

/** RFC 6750 §3.1: the token lacks a permission the request needs (403). */
export class InsufficientScopeError extends OAuthError {
  constructor(description: string) {
    super("insufficient_scope", description, 403);
  }
}

/** RFC 6749 §4.1.2.1 and OIDC Core §3.1.2.6: errors sent back through the redirect. */
export class AccessDeniedError extends OAuthError {
  constructor(description: string) {
    super("access_denied", description, 400);
  }
}

/** A client or person reached an endpoint faster than its limit allows. */
export class TooManyRequestsError extends OAuthError {
  constructor(
    description: string,
    readonly retryAfterSeconds: number,
  ) {
    super("temporarily_unavailable", description, 429);
  }
}
