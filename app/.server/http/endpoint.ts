import { getServices, type Services } from "../services.ts";
import { jsonResponse, setDefaultHeader, type ApiResponse } from "./api-response.ts";
import { toErrorResponse, type ErrorContext } from "./error-response.ts";

/**
 * Runs a JSON endpoint of the provider: every response, success or error,
 * carries a fresh DPoP-Nonce (DESIGN 4.2) and is never cached.
 */
export async function jsonEndpoint(context: ErrorContext, handler: (services: Services) => Promise<ApiResponse>): Promise<ApiResponse> {
  let services: Services;
  try {
    services = getServices();
  } catch (error) {
    return toErrorResponse(error, { context });
  }
  const dpopNonce = services.nonces.current();
  try {
    const response = await handler(services);
    response.headers["DPoP-Nonce"] = dpopNonce;
    setDefaultHeader(response, "Cache-Control", "no-store");
    return response;
  } catch (error) {
    return toErrorResponse(error, { context, dpopNonce });
  }
}

/** RFC 9110 §15.5.6: 405 with the methods the endpoint does support (and, like every /oauth answer, a nonce). */
export function methodNotAllowed(allow: string): Promise<ApiResponse> {
  return jsonEndpoint("authorization-server", async () =>
    jsonResponse({ error: "invalid_request", error_description: `Method not allowed; use ${allow}` }, 405, { Allow: allow }),
  );
}

export function noStoreJson(body: unknown, status = 200): ApiResponse {
  return jsonResponse(body, status, { "Cache-Control": "no-store", Pragma: "no-cache" });
}
