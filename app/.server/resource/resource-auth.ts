import type { AccountState } from "../accounts/account-status.ts";
import type { PasswordSessions } from "../accounts/password-sessions.ts";
import { FULL_ACCESS, looksLikeJwt, TAKENDOWN_ACCESS, type AccessScope } from "../accounts/session-jwt.ts";
import type { AccessTokenVerifier } from "../oauth/token/access-token-verifier.ts";
import type { Grant } from "../oauth/token/grant-store.ts";
import { OAuthPermissions } from "./scope-permissions.ts";
import { appPasswordApp, oauthApp, type ActivityApp } from "../activity/activity-lines.ts";
import { PasswordSessionPermissions } from "./password-session-permissions.ts";

/**
 * What a caller may do, whichever way it signed in (docs/architecture.md, "Scopes and the data server"): an OAuth
 * token by its scope, a password session by the reference's auth scope (docs/decisions/0047). Each check throws the
 * refusal its kind of caller gets; the handlers call them without knowing which kind they face.
 */
export interface CallerPermissions {
  requireRepo(collection: string, action: "create" | "update" | "delete"): void;
  requireBlob(mime: string): void;
  requireRpc(lxm: string, aud: string): void;
  requireIdentity(attr: "handle" | "*"): void;
  canReadEmail(): boolean;
  /**
   * Confirming the account's email address (requestEmailConfirmation, confirmEmail: docs/decisions/0052):
   * `account:email?action=manage` for an OAuth token, as the reference asks; any password session.
   */
  requireEmailManagement(): void;
  /** Managing the account itself (creating app passwords…): the account's own password session only, never an OAuth token. */
  requireAccountManagement(nsid: string): void;
  /** Any password session, an app password's too (listing and revoking app passwords, as the reference allows); never an OAuth token. */
  requirePasswordSession(nsid: string): void;
}

/** How the caller signed in: an OAuth grant's DPoP-bound token, or a password session's bearer JWT. */
export type CallerCredentials =
  | { kind: "oauth"; grant: Grant; scope: string }
  | { kind: "password"; sessionId: string; scope: AccessScope; /** The app password it signed in with; null: the account's own. */ appPasswordId: string | null };

/** The caller of an authenticated /xrpc request. */
export class ResourceCaller {
  readonly permissions: CallerPermissions;

  constructor(
    readonly did: string,
    readonly handle: string,
    readonly credentials: CallerCredentials,
    /**
     * The account's state (accounts/account-status.ts): the router refuses a deactivated account's calls but
     * getSession (docs/decisions/0031), a taken-down account's but those a takedown leaves the person
     * (docs/decisions/0051).
     */
    readonly accountState: AccountState = "active",
  ) {
    // An OAuth token's scope, less what the person took back from the app since (docs/decisions/0053).
    this.permissions = credentials.kind === "oauth" ? OAuthPermissions.of(credentials.scope, credentials.grant.withdrawn) : PasswordSessionPermissions.of(credentials.scope);
  }

  requireRepo(collection: string, action: "create" | "update" | "delete"): void {
    this.permissions.requireRepo(collection, action);
  }

  requireBlob(mime: string): void {
    this.permissions.requireBlob(mime);
  }

  requireRpc(lxm: string, aud: string): void {
    this.permissions.requireRpc(lxm, aud);
  }

  requireIdentity(attr: "handle" | "*"): void {
    this.permissions.requireIdentity(attr);
  }

  canReadEmail(): boolean {
    return this.permissions.canReadEmail();
  }

  requireAccountManagement(nsid: string): void {
    this.permissions.requireAccountManagement(nsid);
  }

  requireEmailManagement(): void {
    this.permissions.requireEmailManagement();
  }

  requirePasswordSession(nsid: string): void {
    this.permissions.requirePasswordSession(nsid);
  }

  /**
   * The app whose activity this caller's calls count as (docs/decisions/0053): an OAuth client, or an app password;
   * none for a session signed in with the account's own password, which is the person, not an app.
   */
  get activityApp(): ActivityApp | undefined {
    const { credentials } = this;
    if (credentials.kind === "oauth") return oauthApp(credentials.grant.clientId);
    return credentials.appPasswordId === null ? undefined : appPasswordApp(credentials.appPasswordId);
  }

  /**
   * Whether the caller is a full-access session, which alone may read and set what only the account holder sees (the
   * birth date among the preferences: repo/preferences.ts). As in the reference PDS, only a session signed in with
   * the account's own password is (docs/decisions/0047); an app password's is not, and an OAuth app never is,
   * whatever its scope.
   */
  get fullAccess(): boolean {
    return this.credentials.kind === "password" && this.credentials.scope === FULL_ACCESS;
  }

  /** A taken-down account's takedown-only session (docs/decisions/0051): it reaches only what a takedown leaves the person. */
  get takedownOnly(): boolean {
    return this.credentials.kind === "password" && this.credentials.scope === TAKENDOWN_ACCESS;
  }
}

export type ResourceRequest = { authorization: string | null; dpop: string | null; method: string; url: string };

/** Who checks each kind of credential. */
export type CallerVerifiers = { accessTokens: AccessTokenVerifier; passwordSessions: PasswordSessions };

/**
 * The caller of a data-server request: `Authorization: Bearer <JWT>` is a password session's access token
 * (docs/decisions/0047); anything else is an OAuth token, DPoP-bound (RFC 9449 §7; an OAuth token sent as a Bearer
 * token is refused there, §7.2: it never has a JWT's shape).
 */
export async function authenticateCaller(verifiers: CallerVerifiers, request: ResourceRequest): Promise<ResourceCaller> {
  const bearer = bearerJwt(request.authorization);
  if (bearer !== undefined) {
    const { session, handle, accountState } = await verifiers.passwordSessions.authenticate(bearer);
    return new ResourceCaller(session.accountDid, handle, { kind: "password", sessionId: session.id, scope: session.scope, appPasswordId: session.appPasswordId }, accountState);
  }
  const subject = await verifiers.accessTokens.verify(request);
  return new ResourceCaller(subject.did, subject.handle, { kind: "oauth", grant: subject.grant, scope: subject.scope }, subject.accountState);
}

/** The token of `Authorization: Bearer <token>` when it is a JWT; undefined for anything else. */
export function bearerJwt(authorization: string | null): string | undefined {
  const match = /^bearer +(\S+)$/i.exec(authorization?.trim() ?? "");
  return match && looksLikeJwt(match[1]!) ? match[1] : undefined;
}
