import type { ApiRequest } from "./api-request.ts";
import { jsonResponse, setDefaultHeader, type ApiResponse } from "./api-response.ts";
import { toErrorResponse } from "./error-response.ts";
import type { ErrorReporter } from "../observability/report-error.ts";

/**
 * An OAuth JSON endpoint of the route table: the handler's answer is never
 * cached, and anything it throws becomes the OAuth error answer
 * (`toErrorResponse`), in the resource form (401 with a DPoP challenge,
 * RFC 9449 §7.1) for endpoints protected by an access token. An unexpected
 * error goes to `report`, with the request's id.
 */
export function oauthEndpoint(
  handler: (request: ApiRequest) => Promise<ApiResponse>,
  options: { report: ErrorReporter; resource?: boolean },
): (request: ApiRequest) => Promise<ApiResponse> {
  const context = options.resource ? "resource" : "authorization-server";
  const { report } = options;
  return async (request) => {
    try {
      const response = await handler(request);
      setDefaultHeader(response, "Cache-Control", "no-store");
      return response;
    } catch (error) {
      return toErrorResponse(error, { context, report: (message, thrown) => report(message, thrown, request.requestId) });
    }
  };
}

export function noStoreJson(body: unknown, status = 200): ApiResponse {
  return jsonResponse(body, status, { "Cache-Control": "no-store", Pragma: "no-cache" });
}
