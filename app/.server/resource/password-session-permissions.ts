import { FULL_ACCESS, PRIVILEGED_APP_PASSWORD_ACCESS, TAKENDOWN_ACCESS, type AccessScope } from "../accounts/session-jwt.ts";
import { AtriumError } from "../errors/atrium-error.ts";

/**
 * Methods only the account's password or a privileged app password reach (the reference PDS's PRIVILEGED_METHODS):
 * the chat service, and service tokens for moving the account to another server.
 */
function isPrivilegedMethod(lxm: string): boolean {
  return lxm.startsWith("chat.bsky.") || lxm === "com.atproto.server.createAccount";
}

/** The reference's refusals of a password session's token for what its scope does not reach: 400 InvalidToken. */
function badToken(message: string): AtriumError {
  return new AtriumError("password_session_scope", message, { status: 400, xrpcName: "InvalidToken" });
}

/**
 * A password session's permissions (docs/decisions/0047), as the reference PDS rules them by its auth scope:
 * - `com.atproto.access` (the account's own password): everything;
 * - `com.atproto.appPassPrivileged`: everything but managing the account (app passwords, email, handle,
 *   deactivation, deletion);
 * - `com.atproto.appPass`: that, and neither chat.bsky.* nor service tokens for privileged methods.
 * Every password session reads the account's email (getSession), as the reference's do. The handle is the person's
 * own to change here, not an app password's (the reference lets one: the product decided otherwise).
 */
export class PasswordSessionPermissions {
  private static readonly byScope = new Map<AccessScope, PasswordSessionPermissions>();

  private constructor(private readonly scope: AccessScope) {}

  static of(scope: AccessScope): PasswordSessionPermissions {
    let permissions = this.byScope.get(scope);
    if (!permissions) this.byScope.set(scope, (permissions = new PasswordSessionPermissions(scope)));
    return permissions;
  }

  requireRepo(): void {}

  requireBlob(): void {}

  requireRpc(lxm: string): void {
    // A takedown-only session is opened with the account's own password only, to move away (docs/decisions/0051).
    if (this.scope === TAKENDOWN_ACCESS && lxm === "com.atproto.server.createAccount") return;
    if (this.scope !== FULL_ACCESS && this.scope !== PRIVILEGED_APP_PASSWORD_ACCESS && isPrivilegedMethod(lxm)) {
      throw badToken(`Bad token method: ${lxm} needs the account's password or a privileged app password`);
    }
  }

  requireIdentity(): void {
    // A takedown-only session (the account's own password) may sign the DID operation that moves the account away;
    // the router lets it reach nothing else that asks this (docs/decisions/0051).
    if (this.scope !== FULL_ACCESS && this.scope !== TAKENDOWN_ACCESS) throw badToken("Bad token scope: an app password cannot change the account's identity");
  }

  canReadEmail(): boolean {
    return true;
  }

  requirePasswordSession(): void {}

  /** As the reference's: every password session may confirm the account's address (it changes nothing but the flag). */
  requireEmailManagement(): void {}

  requireAccountManagement(nsid: string): void {
    if (this.scope !== FULL_ACCESS) throw badToken(`Bad token scope: ${nsid} needs a session signed in with the account's password, not an app password`);
  }
}
