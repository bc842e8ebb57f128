import { randomToken, sha256Base64url } from "../util/crypto.ts";
import { HOUR, MINUTE } from "../util/time.ts";
import { summary, type AccountSummary } from "./account-manager.ts";
import { isRecentAuthentication } from "./recent-authentication.ts";
import type { CredentialProof, SessionStore } from "./session-store.ts";

export type BrowserSession = {
  account: AccountSummary;
  idHash: string;
  createdAt: Date;
  /** When this browser last proved the password or a passkey (null: not since the column exists). */
  authenticatedAt: Date | null;
  /** Whether that was recent enough to add a passkey or secure the account (docs/decisions/0007). */
  recentlyAuthenticated: boolean;
  /** "Stay signed in on this device" was ticked: the long lifetime, and only such a session answers prompt=none (docs/decisions/0020). */
  staySignedIn: boolean;
};

export type SessionListing = {
  idHash: string;
  userAgent: string | null;
  ipAddress: string | null;
  createdAt: Date;
  lastSeenAt: Date;
  staySignedIn: boolean;
  /** Which browser it is, for this account (docs/decisions/0056); null when not recorded. */
  deviceHash: string | null;
};

/**
 * How long a session lives when the person did not tick "Stay signed in on this device" (docs/decisions/0020): its
 * cookie ends with the browser session, and the server ends it after this even if the browser never closes.
 */
export const SHORT_SESSION_MS = 12 * HOUR;

/**
 * Server-side browser sessions (docs/architecture.md, "Browser security"): the cookie holds a random id,
 * the database only its hash. Expired sessions are deleted when read, and a
 * few at each sign-in (browsers that never come back).
 */
export class SessionManager {
  constructor(
    private readonly store: SessionStore,
    private readonly lifetimeMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * A session for a browser that has just signed in (password or passkey): it starts recently authenticated. It
   * lives the configured lifetime when the person chose to stay signed in, SHORT_SESSION_MS otherwise. Its id, or
   * undefined when `proof` no longer holds: the password was changed or reset, or the passkey removed, while the
   * sign-in was being checked (SessionStore.create).
   */
  async create(accountDid: string, meta: { userAgent?: string; ipAddress?: string; staySignedIn?: boolean; deviceHash?: string }, proof: CredentialProof): Promise<string | undefined> {
    const staySignedIn = meta.staySignedIn ?? false;
    const id = randomToken("ses");
    const now = this.now();
    const session = {
      idHash: sha256Base64url(id),
      accountDid,
      userAgent: meta.userAgent?.slice(0, 512) ?? null,
      ipAddress: meta.ipAddress?.slice(0, 64) ?? null,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: now + (staySignedIn ? this.lifetimeMs : Math.min(this.lifetimeMs, SHORT_SESSION_MS)),
      authenticatedAt: now,
      staySignedIn,
      deviceHash: meta.deviceHash ?? null,
    };
    return (await this.store.create(session, proof)) ? id : undefined;
  }

  async resolve(id: string | undefined): Promise<BrowserSession | undefined> {
    if (!id || id.length > 128) return undefined;
    const idHash = sha256Base64url(id);
    const now = this.now();
    const found = await this.store.find(idHash, now);
    if (!found) return undefined;
    const { session, account } = found;
    // Record activity at most once a minute: keeps reads cheap.
    if (now - session.lastSeenAt > MINUTE) await this.store.touch(idHash, now);
    return {
      idHash,
      createdAt: new Date(session.createdAt),
      authenticatedAt: session.authenticatedAt === null ? null : new Date(session.authenticatedAt),
      recentlyAuthenticated: isRecentAuthentication(session.authenticatedAt, now),
      staySignedIn: session.staySignedIn,
      account: summary(account),
    };
  }

  /** This browser has just proved the account's password or one of its passkeys again. */
  async markAuthenticated(idHash: string): Promise<void> {
    await this.store.markAuthenticated(idHash, this.now());
  }

  async list(accountDid: string): Promise<SessionListing[]> {
    const sessions = await this.store.listLive(accountDid, this.now());
    return sessions.map(({ idHash, userAgent, ipAddress, createdAt, lastSeenAt, staySignedIn, deviceHash }) => ({
      idHash,
      staySignedIn,
      deviceHash: deviceHash ?? null,
      userAgent,
      ipAddress,
      createdAt: new Date(createdAt),
      lastSeenAt: new Date(lastSeenAt),
    }));
  }

  /** Signs out one of the account's browsers. */
  async destroyByHash(accountDid: string, idHash: string): Promise<void> {
    await this.store.delete(idHash, accountDid);
  }

  /**
   * Signs out one browser of the account: every live session it signed in with (docs/decisions/0056), through the
   * same deletion as signing out one session. How many ended.
   */
  async destroyBrowser(accountDid: string, deviceHash: string): Promise<number> {
    return this.store.deleteBrowser(accountDid, deviceHash);
  }

  /** Signs out every browser of the account except the current one. */
  async destroyOthers(accountDid: string, currentIdHash: string): Promise<number> {
    return this.store.deleteOthers(accountDid, currentIdHash);
  }

  async destroy(id: string | undefined): Promise<void> {
    if (!id) return;
    await this.store.delete(sha256Base64url(id));
  }
}
