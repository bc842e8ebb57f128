import { PasskeyError } from "../accounts/passkey-manager.ts";
import { TooManyRequestsError } from "../oauth/errors/oauth-error.ts";

/** A JSON answer of the screens' passkey endpoints (fetched by the pages' own scripts). */
export type JsonOutcome = { status: number; body: unknown; headers?: Record<string, string> };

export function jsonError(status: number, error: string, description: string, headers?: Record<string, string>): JsonOutcome {
  return { status, body: { error, error_description: description }, headers };
}

/**
 * The JSON answer to a passkey step that failed in a way the person can act
 * on: the passkey was refused (400), or sign-in attempts are waiting (429 with
 * Retry-After). Anything else is not ours to explain and is thrown again.
 */
export function passkeyFailure(error: unknown): JsonOutcome {
  if (error instanceof PasskeyError) return jsonError(400, "passkey_failed", error.message);
  if (error instanceof TooManyRequestsError) {
    return jsonError(429, "temporarily_unavailable", error.description, { "Retry-After": String(error.retryAfterSeconds) });
  }
  throw error;
}
