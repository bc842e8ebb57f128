import { AtriumError } from "../errors/atrium-error.ts";

/** Request bodies other than blob uploads are small (forms, JSON): larger ones get 413 in the endpoint's shape. */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * A request body larger than its route's limit (api-routes.ts `bodyLimit`), whether its Content-Length said so or its
 * bytes went past the limit as they arrived: RFC 9110 §15.5.14, "the request content is larger than the server is
 * willing or able to process". Answered 413 in the route's error shape, never with the body cut at the limit.
 */
export function bodyTooLarge(limit: number): AtriumError {
  return new AtriumError("invalid_request", `Request body larger than ${limit} bytes`, { status: 413, xrpcName: "PayloadTooLarge" });
}

export function isBodyTooLarge(error: unknown): boolean {
  return error instanceof AtriumError && error.status === 413 && error.xrpcName === "PayloadTooLarge";
}
