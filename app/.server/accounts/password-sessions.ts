import { AtriumError } from "../errors/atrium-error.ts";
import type { AccountState } from "./account-status.ts";
import { randomToken, sha256Base64url } from "../util/crypto.ts";
import { DAY, HOUR, MINUTE } from "../util/time.ts";
import type { StoredAppPassword } from "./app-password-store.ts";
import type { ListedPasswordSession, PasswordSessionStore, SessionAccount, SessionProof, StoredPasswordSession } from "./password-session-store.ts";
import {
  APP_PASSWORD_ACCESS,
  FULL_ACCESS,
  newJti,
  PRIVILEGED_APP_PASSWORD_ACCESS,
  REFRESH_SCOPE,
  TAKENDOWN_ACCESS,
  SessionJwtRefused,
  signSessionJwt,
  successorJti,
  verifySessionJwt,
  type AccessScope,
  type SessionJwtKeys,
} from "./session-jwt.ts";

/** The reference PDS's lifetimes: access tokens 120 minutes, refresh tokens 90 days, a spent refresh token's grace 2 hours. */
export const PASSWORD_ACCESS_LIFETIME = 2 * HOUR;
export const PASSWORD_REFRESH_LIFETIME = 90 * DAY;
export const PASSWORD_REFRESH_GRACE = 2 * HOUR;
/** "Last used" is kept to the minute: no write on most calls. */
const LAST_USED_RESOLUTION = MINUTE;

export type PasswordSessionRefusal = "expired" | "revoked" | "invalid" | "disabled";

const REFUSALS: Record<PasswordSessionRefusal, { status: number; xrpcName: string; message: string }> = {
  expired: { status: 400, xrpcName: "ExpiredToken", message: "Token has expired" },
  revoked: { status: 400, xrpcName: "ExpiredToken", message: "Token has been revoked" },
  invalid: { status: 400, xrpcName: "InvalidToken", message: "Token could not be verified" },
  disabled: {
    status: 501,
    xrpcName: "MethodNotImplemented",
    message: "This server signs apps in with OAuth only: password sessions and app passwords are turned off by its operator",
  },
};

/**
 * A password session's token refused, with the reference's XRPC names and messages: an expired token is
 * `ExpiredToken` (the official client refreshes then), a revoked one too (its refresh fails, and the client signs out),
 * anything else `InvalidToken`.
 */
export class PasswordSessionError extends AtriumError {
  constructor(readonly reason: PasswordSessionRefusal) {
    const { status, xrpcName, message } = REFUSALS[reason];
    super(`password_session_${reason}`, message, { status, xrpcName });
  }
}

/** How a sign-in proved itself: the account's password (the hash it matched), or one of its app passwords. */
export type SessionCredential = { passwordHash: string } | { appPassword: StoredAppPassword };

/** The tokens, and the account as the answer tells it (read in the same step). */
export type IssuedPasswordSession = { accessJwt: string; refreshJwt: string; did: string; scope: AccessScope; account: SessionAccount };

/** The caller behind an access token: its session, the account's handle, the account's state. */
export type PasswordSessionSubject = { session: StoredPasswordSession; handle: string; accountState: AccountState };

export type PasswordSessionOptions = {
  /** `aud` of every token: this server's DID (describeServer's). */
  serviceDid: string;
  /** ATRIUM_PASSWORD_SESSIONS: off, every sign-in, refresh and call with these tokens is refused, saying why. */
  enabled: boolean;
  now: () => number;
  accessLifetimeMs?: number;
  refreshLifetimeMs?: number;
  graceMs?: number;
};

/**
 * Password sessions (docs/decisions/0047): com.atproto.server.createSession, refreshSession, deleteSession and the
 * calls made with their access tokens. Tokens are JWTs as the reference issues them (accounts/session-jwt.ts); what
 * makes one live is its row, read on every call (one indexed read, as an OAuth token's), so that deleting a session
 * (sign-out, a revoked app password, a password change, the account deleted) ends its tokens at once.
 */
export class PasswordSessions {
  private readonly accessLifetimeMs: number;
  private readonly refreshLifetimeMs: number;
  private readonly graceMs: number;

  constructor(
    private readonly store: PasswordSessionStore,
    private readonly keys: SessionJwtKeys,
    private readonly options: PasswordSessionOptions,
  ) {
    this.accessLifetimeMs = options.accessLifetimeMs ?? PASSWORD_ACCESS_LIFETIME;
    this.refreshLifetimeMs = options.refreshLifetimeMs ?? PASSWORD_REFRESH_LIFETIME;
    this.graceMs = options.graceMs ?? PASSWORD_REFRESH_GRACE;
  }

  get enabled(): boolean {
    return this.options.enabled;
  }

  /** Refuses, saying so, when the operator turned password sessions off. */
  requireEnabled(): void {
    if (!this.options.enabled) throw new PasswordSessionError("disabled");
  }

  /**
   * A new session for an account that just proved `credential`, or undefined when that no longer holds: the password
   * changed or the app password was revoked while the sign-in was being checked (PasswordSessionStore.create).
   * `takedownOnly`: the taken-down account's own session (TAKENDOWN_ACCESS, docs/decisions/0051).
   */
  async create(accountDid: string, credential: SessionCredential, userAgent: string | undefined, options: { takedownOnly?: boolean } = {}): Promise<IssuedPasswordSession | undefined> {
    this.requireEnabled();
    const now = this.options.now();
    const scope = options.takedownOnly ? TAKENDOWN_ACCESS : scopeOf(credential);
    const session: StoredPasswordSession = {
      id: randomToken("pss"),
      accountDid,
      appPasswordId: "appPassword" in credential ? credential.appPassword.id : null,
      scope,
      userAgent: userAgent?.slice(0, 512) ?? null,
      createdAt: now,
      lastUsedAt: now,
      expiresAt: now + this.refreshLifetimeMs,
    };
    const access = newJti();
    const refresh = newJti();
    const proof: SessionProof =
      "appPassword" in credential ? { appPasswordId: credential.appPassword.id, privileged: credential.appPassword.privileged } : { passwordHash: credential.passwordHash };
    const tokens = { accessHash: sha256Base64url(access), accessExpiresAt: now + this.accessLifetimeMs, refreshHash: sha256Base64url(refresh), refreshExpiresAt: session.expiresAt };
    const account = await this.store.create(session, proof, tokens);
    if (!account) return undefined;
    return this.issue(accountDid, scope, account, { jti: access, expiresAt: tokens.accessExpiresAt }, { jti: refresh, expiresAt: tokens.refreshExpiresAt }, now);
  }

  /**
   * refreshSession: spends the refresh token and answers the next pair. A token spent before, within its grace (the
   * answer to the first refresh was lost, or two refreshes raced), gets the same successor again, with a new access
   * token; past the grace, or once the session ended, `revoked`.
   */
  async refresh(refreshJwt: string): Promise<IssuedPasswordSession> {
    this.requireEnabled();
    const now = this.options.now();
    const claims = await this.verify("refresh", refreshJwt, now);
    const successor = successorJti(this.keys, claims.jti);
    const access = newJti();
    const accessExpiresAt = now + this.accessLifetimeMs;
    const outcome = await this.store.refresh({
      accountDid: claims.sub,
      refreshHash: sha256Base64url(claims.jti),
      successorHash: sha256Base64url(successor),
      accessHash: sha256Base64url(access),
      accessExpiresAt,
      refreshExpiresAt: now + this.refreshLifetimeMs,
      graceMs: this.graceMs,
      now,
    });
    if (outcome.kind === "revoked") throw new PasswordSessionError("revoked");
    return this.issue(claims.sub, outcome.session.scope, outcome.account, { jti: access, expiresAt: accessExpiresAt }, { jti: successor, expiresAt: outcome.successorExpiresAt }, now);
  }

  /** deleteSession: ends the session of a refresh token, expired or spent ones too (the reference allows them); an unknown one is no error. */
  async end(refreshJwt: string): Promise<void> {
    const claims = await this.verify("refresh", refreshJwt, this.options.now(), { ignoreExpiry: true });
    await this.store.endByRefreshToken(claims.sub, sha256Base64url(claims.jti));
  }

  /** The caller behind an access token: its signature first (no database read for garbage), then its row. */
  async authenticate(accessJwt: string): Promise<PasswordSessionSubject> {
    this.requireEnabled();
    const now = this.options.now();
    const claims = await this.verify("access", accessJwt, now);
    const owner = await this.store.findAccess(sha256Base64url(claims.jti), now);
    if (!owner || owner.session.accountDid !== claims.sub) throw new PasswordSessionError("revoked");
    if (now - owner.session.lastUsedAt > LAST_USED_RESOLUTION) await this.store.touch(owner.session.id, now);
    return owner;
  }

  /** The account's live password sessions, for Connected apps. */
  async list(accountDid: string): Promise<ListedPasswordSession[]> {
    return this.store.list(accountDid, this.options.now());
  }

  /** Signs one of the account's password sessions out (Connected apps); whether it was there. */
  async signOut(accountDid: string, sessionId: string): Promise<boolean> {
    return this.store.end(accountDid, sessionId);
  }

  private async verify(kind: "access" | "refresh", token: string, now: number, options: { ignoreExpiry?: boolean } = {}) {
    try {
      return await verifySessionJwt(this.keys, kind, token, { aud: this.options.serviceDid, now, ...options });
    } catch (error) {
      if (error instanceof SessionJwtRefused) throw new PasswordSessionError(error.reason);
      throw error;
    }
  }

  private async issue(
    did: string,
    scope: AccessScope,
    account: SessionAccount,
    access: { jti: string; expiresAt: number },
    refresh: { jti: string; expiresAt: number },
    now: number,
  ): Promise<IssuedPasswordSession> {
    const aud = this.options.serviceDid;
    const [accessJwt, refreshJwt] = await Promise.all([
      signSessionJwt(this.keys, "access", { sub: did, aud, scope, jti: access.jti, issuedAt: now, expiresAt: access.expiresAt }),
      signSessionJwt(this.keys, "refresh", { sub: did, aud, scope: REFRESH_SCOPE, jti: refresh.jti, issuedAt: now, expiresAt: refresh.expiresAt }),
    ]);
    return { accessJwt, refreshJwt, did, scope, account };
  }
}

/** The reference's scope for what signed in: the account's password, or an app password (privileged or not). */
function scopeOf(credential: SessionCredential): AccessScope {
  if (!("appPassword" in credential)) return FULL_ACCESS;
  return credential.appPassword.privileged ? PRIVILEGED_APP_PASSWORD_ACCESS : APP_PASSWORD_ACCESS;
}
