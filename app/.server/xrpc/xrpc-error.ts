import { ZodError } from "zod";
import { OAuthError } from "../oauth/errors/oauth-error.ts";
import { jsonResponse, type ApiResponse } from "../http/api-response.ts";
import { dpopChallenge } from "../http/error-response.ts";
import type { ErrorReporter } from "../observability/report-error.ts";

/** An XRPC error: HTTP status plus the `{error, message}` body of the atproto conventions. */
export class XrpcError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
  ) {
    super(message);
    this.name = "XrpcError";
  }
}

export const invalidRequest = (message: string) => new XrpcError(400, "InvalidRequest", message);

/** An XRPC error answer the entry itself gives (limits, sizes, timeouts, wrong methods). */
export function xrpcRefusal(status: number, error: string, message: string, headers: Record<string, string> = {}): ApiResponse {
  return jsonResponse({ error, message }, status, { "Cache-Control": "no-store", ...headers });
}

/** XRPC names for the token errors of RFC 6750 §3.1 and RFC 9449 §7.1. */
const AUTH_ERROR_NAMES: Record<string, string> = {
  invalid_token: "InvalidToken",
  invalid_dpop_proof: "InvalidDpopProof",
  use_dpop_nonce: "UseDpopNonce",
  insufficient_scope: "InsufficientScope",
};

/** The one place that turns anything thrown by an /xrpc handler into its response. */
export function xrpcErrorResponse(thrown: unknown, dpopNonce: string | undefined, report: ErrorReporter): ApiResponse {
  const headers: Record<string, string> = { "Cache-Control": "no-store" };
  if (dpopNonce) headers["DPoP-Nonce"] = dpopNonce;
  if (thrown instanceof XrpcError) return jsonResponse({ error: thrown.error, message: thrown.message }, thrown.status, headers);
  if (thrown instanceof ZodError) {
    const issue = thrown.issues[0];
    const path = issue?.path.join(".");
    const message = issue ? `${path ? `${path}: ` : ""}${issue.message}` : "Invalid input";
    return jsonResponse({ error: "InvalidRequest", message }, 400, headers);
  }
  if (thrown instanceof OAuthError && AUTH_ERROR_NAMES[thrown.code]) {
    const status = thrown.code === "insufficient_scope" ? 403 : 401;
    headers["WWW-Authenticate"] = dpopChallenge(thrown.code, thrown.description);
    return jsonResponse({ error: AUTH_ERROR_NAMES[thrown.code], message: thrown.description }, status, headers);
  }
  if (thrown instanceof OAuthError && thrown.status < 500) {
    return jsonResponse({ error: "InvalidRequest", message: thrown.description }, thrown.status, headers);
  }
  report("xrpc handler failed", thrown);
  return jsonResponse({ error: "InternalServerError", message: "Internal Server Error" }, 500, headers);
}
