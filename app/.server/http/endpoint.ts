import type { ErrorReporter } from "../observability/report-error.ts";
import type { ApiRequest } from "./api-request.ts";
import { jsonResponse, setDefaultHeader, type ApiResponse } from "./api-response.ts";
import { oauthErrorAnswer } from "./error-answers.ts";

/**
 * An OAuth JSON endpoint of the route table: the handler's answer is never
 * cached, and anything it throws becomes the OAuth error answer; an
 * unexpected error goes to `report`, with the request's id.
 */
export function oauthEndpoint(handler: (request: ApiRequest) => Promise<ApiResponse>, options: { report: ErrorReporter }): (request: ApiRequest) => Promise<ApiResponse> {
  const { report } = options;
  return async (request) => {
    try {
      const response = await handler(request);
      setDefaultHeader(response, "Cache-Control", "no-store");
      return response;
    } catch (error) {
      return oauthErrorAnswer(error, {}, (message, thrown) => report(message, thrown, request.requestId));
    }
  };
}

export function noStoreJson(body: unknown, status = 200): ApiResponse {
  return jsonResponse(body, status, { "Cache-Control": "no-store", Pragma: "no-cache" });
}
