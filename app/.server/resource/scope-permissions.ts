import { ScopeMissingError, ScopePermissionsTransition, type IdentityPermissionMatch } from "@atproto/oauth-scopes";
import { AtriumError } from "../errors/atrium-error.ts";
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

/** Parsed permissions per scope string: grants share few distinct scopes, and parsing is per request otherwise. */
const permissionsByScope = new Map<string, OAuthPermissions>();
const MAX_CACHED_SCOPES = 1000;

/**
 * An OAuth token's permissions (resource/resource-auth.ts's CallerPermissions): its scope, matched by the library.
 * A missing permission is 403 with the DPoP `insufficient_scope` challenge.
 */
export class OAuthPermissions {
  private constructor(readonly scope: AtriumScopePermissions) {}

  static of(scope: string): OAuthPermissions {
    let permissions = permissionsByScope.get(scope);
    if (!permissions) {
      permissions = new OAuthPermissions(new AtriumScopePermissions(scope));
      if (permissionsByScope.size >= MAX_CACHED_SCOPES) permissionsByScope.clear();
      permissionsByScope.set(scope, permissions);
    }
    return permissions;
  }

  requireRepo(collection: string, action: "create" | "update" | "delete"): void {
    requirePermission(() => this.scope.assertRepo({ collection, action }));
  }

  requireBlob(mime: string): void {
    requirePermission(() => this.scope.assertBlob({ mime }));
  }

  requireRpc(lxm: string, aud: string): void {
    requirePermission(() => this.scope.assertRpc({ lxm, aud }));
  }

  requireIdentity(attr: "handle" | "*"): void {
    requirePermission(() => this.scope.assertIdentity({ attr }));
  }

  canReadEmail(): boolean {
    return this.scope.allowsAccount({ attr: "email", action: "read" });
  }

  requirePasswordSession(nsid: string): void {
    this.requireAccountManagement(nsid);
  }

  /** The reference PDS: "OAuth credentials are not supported for this endpoint", whatever the scope. */
  requireAccountManagement(nsid: string): void {
    throw new AtriumError("forbidden", `${nsid} is not available to apps signed in with OAuth, whatever their permissions: sign in to your account directly`, {
      status: 403,
      xrpcName: "Forbidden",
    });
  }
}
