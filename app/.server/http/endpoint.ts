import type { ApiRequest } from "./api-request.ts";
import { jsonResponse, setDefaultHeader, type ApiResponse } from "./api-response.ts";
import { oauthErrorAnswer } from "./error-answers.ts";

/**
 * An OAuth JSON endpoint of the route table: the handler's answer is never
 * cached, and anything it throws becomes the OAuth error answer.
 */
export function oauthEndpoint(handler: (request: ApiRequest) => Promise<ApiResponse>): (request: ApiRequest) => Promise<ApiResponse> {
  return async (request) => {
    try {
      const response = await handler(request);
      setDefaultHeader(response, "Cache-Control", "no-store");
      return response;
    } catch (error) {
      return oauthErrorAnswer(error);
    }
  };
}

export function noStoreJson(body: unknown, status = 200): ApiResponse {
  return jsonResponse(body, status, { "Cache-Control": "no-store", Pragma: "no-cache" });
}
