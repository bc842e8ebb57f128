import { MINUTE } from "../util/time.ts";

/**
 * How long a browser counts as having just proved who it is: the account's
 * password or one of its passkeys, at sign-in, at "Confirm it's you" or when
 * changing the password. Adding a passkey and securing the account need it
 * (docs/decisions/0007), so a stolen session cookie alone cannot plant a
 * passkey that outlives a password change.
 */
export const RECENT_AUTHENTICATION_MS = 5 * MINUTE;

/** `authenticatedAt`: epoch milliseconds, or null when never recorded. */
export function isRecentAuthentication(authenticatedAt: number | null, now: number): boolean {
  return authenticatedAt !== null && now - authenticatedAt < RECENT_AUTHENTICATION_MS;
}
