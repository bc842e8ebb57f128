/**
 * Keeping request secrets out of the logs (docs/decisions/0014). Tokens,
 * authorization codes, code verifiers, refresh tokens, request_uris,
 * passwords, cookies, DPoP proofs, client assertions and Authorization
 * headers must never be written, whatever a future log call passes. Two
 * layers, both used by the entry's pino logger (server/logger.ts):
 *
 * - `REDACTED_PATHS`: pino's `redact` paths for those names, at the top level
 *   and under the usual containers (headers, bodies, forms, queries). Exact
 *   paths only: a wildcard path costs pino several microseconds on every line
 *   (measured), and every request writes one.
 * - `serializeError`: errors are logged as type, message, stack, code and
 *   cause only (never their other properties, where a library may keep the
 *   request it failed on), and `scrubSecrets` masks anything in those texts
 *   that has the shape of one of this server's secrets.
 */

/** Field names that hold secrets, as forms, JSON bodies and headers name them. */
export const SECRET_FIELDS = [
  "password",
  "current_password",
  "new_password",
  "confirm_password",
  "token",
  "access_token",
  "refresh_token",
  "code",
  "code_verifier",
  "client_assertion",
  "request_uri",
  "csrf_token",
  "session_id",
  // Password sessions (docs/decisions/0047): createSession's answer and its emailed code.
  "accessJwt",
  "refreshJwt",
  "authFactorToken",
  "dpop",
  "authorization",
  "cookie",
  "set-cookie",
] as const;

const CONTAINERS = ["", "req.headers", "res.headers", "headers", "body", "form", "query", "params", "request", "input"];

function pathOf(container: string, field: string): string {
  const key = /^[a-z_]+$/.test(field) ? field : `["${field}"]`;
  if (!container) return key;
  return key.startsWith("[") ? `${container}${key}` : `${container}.${key}`;
}

export const REDACTED_PATHS: readonly string[] = CONTAINERS.flatMap((container) => SECRET_FIELDS.map((field) => pathOf(container, field)));

export const REDACTED = "[redacted]";

const SECRET_PATTERNS: readonly [RegExp, string][] = [
  // This server's opaque secrets: access and refresh tokens, codes, browser sessions, request ids (util/crypto.ts randomToken).
  [/\b(tok|ref|cod|ses|req)-[A-Za-z0-9_-]{16,}/g, `$1-${REDACTED}`],
  // RFC 9126 request_uri values, whatever follows the prefix.
  [/urn:ietf:params:oauth:request_uri:[^\s"'&<>]+/g, `urn:ietf:params:oauth:request_uri:${REDACTED}`],
  // JWS compact serialisations: DPoP proofs (RFC 9449 §4.2), client assertions (RFC 7523), service-auth tokens.
  [/\beyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*/g, REDACTED],
  // Authorization header values (RFC 9449 §7.1 DPoP, RFC 6750 Bearer, RFC 7617 Basic).
  [/\b(DPoP|Bearer|Basic)\s+[^\s"',;]+/gi, `$1 ${REDACTED}`],
  // Form-encoded and JSON members with a secret's name.
  [/\b(password|current_password|new_password|confirm_password|token|access_token|refresh_token|code|code_verifier|client_assertion|request_uri|csrf_token|session_id)=[^&\s"']*/gi, `$1=${REDACTED}`],
  [/"(password|current_password|new_password|confirm_password|token|access_token|refresh_token|accessJwt|refreshJwt|authFactorToken|code|code_verifier|client_assertion|request_uri|csrf_token|session_id|dpop|authorization|cookie)"\s*:\s*"(?:[^"\\]|\\.)*"/gi, `"$1":"${REDACTED}"`],
  // Cookie headers quoted in a message.
  [/\b(cookie|set-cookie)\s*:\s*[^\n]*/gi, `$1: ${REDACTED}`],
];

/** `text` with everything shaped like one of this server's secrets masked. */
export function scrubSecrets(text: string): string {
  let scrubbed = text;
  for (const [pattern, replacement] of SECRET_PATTERNS) scrubbed = scrubbed.replace(pattern, replacement);
  return scrubbed;
}

export type SerializedError = { type: string; message: string; stack?: string; code?: string | number; cause?: SerializedError };

/** An error as the logs show it: its type, message, stack, code and causes, scrubbed; nothing else it carries. */
export function serializeError(error: unknown, depth = 0): SerializedError {
  if (!(error instanceof Error)) {
    let text: string;
    try {
      text = typeof error === "string" ? error : JSON.stringify(error) ?? String(error);
    } catch {
      text = String(error);
    }
    return { type: typeof error, message: scrubSecrets(text.slice(0, 2000)) };
  }
  const serialized: SerializedError = { type: error.name || error.constructor?.name || "Error", message: scrubSecrets(error.message) };
  if (error.stack) serialized.stack = scrubSecrets(error.stack);
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" || typeof code === "number") serialized.code = code;
  if (error.cause !== undefined && depth < 3) serialized.cause = serializeError(error.cause, depth + 1);
  return serialized;
}
