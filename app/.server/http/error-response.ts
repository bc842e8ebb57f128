import { ZodError } from "zod";
import { jsonResponse, type ApiResponse } from "./api-response.ts";
import { InsufficientScopeError, InvalidRequestError, OAuthError, TooManyRequestsError } from "../oauth/errors/oauth-error.ts";
import type { ErrorReporter } from "../observability/report-error.ts";

/**
 * Where an error is answered: the authorization server's JSON endpoints
 * (RFC 6749 §5.2, RFC 9449 §5/§8) or a protected resource (RFC 6750 §3,
 * RFC 9449 §7.1), which also sets WWW-Authenticate.
 */
export type ErrorContext = "authorization-server" | "resource";

export type ErrorResponseOptions = { context: ErrorContext; dpopNonce?: string; report: ErrorReporter };

/** The one function that turns any thrown value into an HTTP response for the JSON endpoints. */
export function toErrorResponse(thrown: unknown, options: ErrorResponseOptions): ApiResponse {
  const error = asOAuthError(thrown, options.report);
  const headers: Record<string, string> = { "Cache-Control": "no-store" };
  if (options.dpopNonce) headers["DPoP-Nonce"] = options.dpopNonce;
  if (error instanceof TooManyRequestsError) headers["Retry-After"] = String(error.retryAfterSeconds);

  let status = error.status;
  if (options.context === "resource") {
    // RFC 9449 §7.1: proof and nonce problems at a resource are 401 with a DPoP challenge.
    if (error.code === "invalid_dpop_proof" || error.code === "use_dpop_nonce" || error.code === "invalid_token") status = 401;
    if (status === 401 || error instanceof InsufficientScopeError) {
      headers["WWW-Authenticate"] = dpopChallenge(error.code, error.description);
    }
  }
  return jsonResponse({ error: error.code, error_description: error.description }, status, headers);
}

/** An OAuth error answer the entry itself gives (limits, sizes, timeouts, unknown paths, wrong methods). */
export function oauthRefusal(status: number, code: string, description: string, headers: Record<string, string> = {}): ApiResponse {
  return jsonResponse({ error: code, error_description: description }, status, { "Cache-Control": "no-store", ...headers });
}

export function dpopChallenge(code: string, description: string): string {
  const quoted = description.replace(/["\\]/g, "'");
  return `DPoP error="${code}", error_description="${quoted}", algs="ES256"`;
}

export function asOAuthError(thrown: unknown, report: ErrorReporter): OAuthError {
  if (thrown instanceof OAuthError) return thrown;
  if (thrown instanceof ZodError) {
    const issue = thrown.issues[0];
    const field = issue?.path.join(".");
    return new InvalidRequestError(issue ? `${field ? `${field}: ` : ""}${issue.message}` : "Invalid request");
  }
  // Unknown errors: a generic description for the client, details only in the log.
  report("Unexpected error while handling a request", thrown);
  return new OAuthError("server_error", "The server could not handle this request", 500);
}
