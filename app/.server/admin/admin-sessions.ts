import { randomToken, safeEqual, sha256Base64url } from "../util/crypto.ts";
import { HOUR } from "../util/time.ts";
import type { AdminAuth } from "./admin-auth.ts";
import type { AdminSessionStore } from "./admin-session-store.ts";

/** How long an operator stays signed in to /admin: a working day, whatever they do meanwhile. */
export const ADMIN_SESSION_MS = 8 * HOUR;

/**
 * Signing in to the operator page, /admin (docs/decisions/0051), with the admin password: checked and throttled as
 * every admin call (AdminAuth), then a session row behind an HttpOnly cookie that ends with the browser, good for
 * ADMIN_SESSION_MS. Each row records a MAC of the password it was made with: once ATRIUM_ADMIN_PASSWORD changes, the
 * sessions made with the old one are refused.
 */
export class AdminSessions {
  constructor(
    private readonly auth: AdminAuth,
    private readonly store: AdminSessionStore,
    /** The key of the password's MAC (derived from the cookie secret). */
    private readonly tagKey: string,
    private readonly now: () => number,
  ) {}

  get enabled(): boolean {
    return this.auth.enabled;
  }

  /** The new session's id for the cookie; throws AdminAuthError or TooManyRequestsError. */
  async signIn(password: string, address: string | undefined): Promise<string> {
    await this.auth.verifyPassword(password, address);
    const id = randomToken("adm");
    const now = this.now();
    await this.store.create({ idHash: sha256Base64url(id), passwordTag: this.auth.passwordTag(this.tagKey), createdAt: now, expiresAt: now + ADMIN_SESSION_MS });
    return id;
  }

  /** Whether the cookie's id names a live session made with the current password. */
  async isSignedIn(id: string | undefined): Promise<boolean> {
    if (!this.auth.enabled || !id || id.length > 128) return false;
    const session = await this.store.find(sha256Base64url(id), this.now());
    return session !== undefined && safeEqual(session.passwordTag, this.auth.passwordTag(this.tagKey));
  }

  async signOut(id: string | undefined): Promise<void> {
    if (id && id.length <= 128) await this.store.delete(sha256Base64url(id));
  }
}
