import type { AtriumError } from "../errors/atrium-error.ts";
import { describeError } from "../errors/describe-error.ts";
import type { ErrorReporter } from "../observability/report-error.ts";
import { jsonResponse, type ApiResponse } from "./api-response.ts";

/**
 * The JSON renderers of the one error model (errors/atrium-error.ts): the
 * OAuth shape (RFC 6749 §5.2: `{error, error_description}`, also spoken by
 * the screens' small JSON endpoints) and the XRPC shape (`{error, message}`).
 * Both carry the error's own challenge, Retry-After and headers, and are never cached.
 */

function errorHeaders(error: AtriumError, extra: Record<string, string>): Record<string, string> {
  const headers: Record<string, string> = { "Cache-Control": "no-store", ...error.headers, ...extra };
  if (error.challenge) headers["WWW-Authenticate"] = error.challenge;
  if (error.retryAfterSeconds !== undefined) headers["Retry-After"] = String(error.retryAfterSeconds);
  return headers;
}

/** Anything thrown, as an OAuth JSON error answer (an unexpected error is told to `report`). */
export function oauthErrorAnswer(thrown: unknown, extraHeaders: Record<string, string> = {}, report?: ErrorReporter): ApiResponse {
  const error = describeError(thrown, report);
  return jsonResponse({ error: error.code, error_description: error.description }, error.status, errorHeaders(error, extraHeaders));
}

/** Anything thrown, as an XRPC error answer: the error's XRPC name, or the generic one for its status. */
export function xrpcErrorAnswer(thrown: unknown, extraHeaders: Record<string, string> = {}, report?: ErrorReporter): ApiResponse {
  const error = describeError(thrown, report);
  return jsonResponse({ error: xrpcNameOf(error), message: error.description }, error.status, errorHeaders(error, extraHeaders));
}

function xrpcNameOf(error: AtriumError): string {
  if (error.xrpcName) return error.xrpcName;
  if (error.status >= 500) return "InternalServerError";
  if (error.status === 429) return "RateLimitExceeded";
  return "InvalidRequest";
}
