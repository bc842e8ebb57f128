import type { ApiRequest } from "./api-request.ts";
import { InvalidRequestError } from "../oauth/errors/oauth-error.ts";
import { hasControlCharacter } from "../util/control-characters.ts";

const MAX_FORM_BYTES = 64 * 1024;

/**
 * Reads an application/x-www-form-urlencoded body (RFC 6749 §3.2) into a
 * plain object. RFC 6749 §3.1: "Request and response parameters MUST NOT be
 * included more than once." No parameter may hold a control character: RFC 6749 Appendix A gives every one of them
 * printable characters only, and one would reach a lookup (a NUL is a 500 on PostgreSQL: util/control-characters.ts).
 */
export async function readForm(request: ApiRequest): Promise<Record<string, string>> {
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(type)) {
    throw new InvalidRequestError("Content-Type must be application/x-www-form-urlencoded");
  }
  const body = await request.text();
  if (body.length > MAX_FORM_BYTES) throw new InvalidRequestError("Request body is too large");
  const result: Record<string, string> = {};
  for (const [key, value] of new URLSearchParams(body)) {
    if (Object.hasOwn(result, key)) throw new InvalidRequestError(`Parameter ${key} must not be repeated`);
    if (hasControlCharacter(key) || hasControlCharacter(value)) throw new InvalidRequestError(`Parameter ${JSON.stringify(key)} must not contain control characters`);
    result[key] = value;
  }
  return result;
}


/** The URL the client addressed, on the issuer's origin (what DPoP htu is checked against). */
export function publicRequestUrl(issuer: string, request: ApiRequest): string {
  // request.url is already on the issuer's origin (see ApiRequest): only the query is dropped.
  const query = request.url.indexOf("?");
  return query === -1 ? request.url : request.url.slice(0, query);
}
