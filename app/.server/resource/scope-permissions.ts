import { ScopeMissingError, ScopePermissionsTransition, type IdentityPermissionMatch } from "@atproto/oauth-scopes";
import { InsufficientScopeError } from "../oauth/errors/oauth-error.ts";

/**
 * The permissions a token's scope grants (docs/architecture.md, "Scopes and the data server"). The library's
 * transition class already lets `transition:generic` cover repo, blob and
 * non-chat RPC, `transition:email` cover account:email and
 * `transition:chat.bsky` cover chat.bsky.* RPC. The product brief also
 * lets `transition:generic` cover `identity:` (everything except account:),
 * which the reference PDS leaves out: that is the one extension here.
 */
export class AtriumScopePermissions extends ScopePermissionsTransition {
  override allowsIdentity(options: IdentityPermissionMatch): boolean {
    if (this.hasTransitionGeneric) return true;
    return super.allowsIdentity(options);
  }
}

/** Runs a library assertion, turning its ScopeMissingError into our 403 naming the permission needed. */
export function requirePermission(check: () => void): void {
  try {
    check();
  } catch (error) {
    if (error instanceof ScopeMissingError) throw new InsufficientScopeError(`Missing permission: ${error.scope}`);
    throw error;
  }
}
