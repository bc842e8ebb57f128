import { ZodError } from "zod";
import { OAuthError } from "../oauth/errors/oauth-error.ts";
import { dpopChallenge } from "../http/error-response.ts";

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

/** XRPC names for the token errors of RFC 6750 §3.1 and RFC 9449 §7.1. */
const AUTH_ERROR_NAMES: Record<string, string> = {
  invalid_token: "InvalidToken",
  invalid_dpop_proof: "InvalidDpopProof",
  use_dpop_nonce: "UseDpopNonce",
  insufficient_scope: "InsufficientScope",
};

/** The one place that turns anything thrown by an /xrpc handler into its response. */
export function xrpcErrorResponse(thrown: unknown, dpopNonce?: string): Response {
  const headers = new Headers({ "Cache-Control": "no-store" });
  if (dpopNonce) headers.set("DPoP-Nonce", dpopNonce);
  if (thrown instanceof XrpcError) return Response.json({ error: thrown.error, message: thrown.message }, { status: thrown.status, headers });
  if (thrown instanceof ZodError) {
    const issue = thrown.issues[0];
    const path = issue?.path.join(".");
    const message = issue ? `${path ? `${path}: ` : ""}${issue.message}` : "Invalid input";
    return Response.json({ error: "InvalidRequest", message }, { status: 400, headers });
  }
  if (thrown instanceof OAuthError && AUTH_ERROR_NAMES[thrown.code]) {
    const status = thrown.code === "insufficient_scope" ? 403 : 401;
    headers.set("WWW-Authenticate", dpopChallenge(thrown.code, thrown.description));
    return Response.json({ error: AUTH_ERROR_NAMES[thrown.code], message: thrown.description }, { status, headers });
  }
  if (thrown instanceof OAuthError && thrown.status < 500) {
    return Response.json({ error: "InvalidRequest", message: thrown.description }, { status: thrown.status, headers });
  }
  console.error("xrpc handler failed:", thrown);
  return Response.json({ error: "InternalServerError", message: "Internal Server Error" }, { status: 500, headers });
}
