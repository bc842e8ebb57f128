import {
  BlobPermission,
  IdentityPermission,
  RepoPermission,
  RpcPermission,
  ScopeMissingError,
  ScopePermissionsTransition,
  type IdentityPermissionMatch,
} from "@atproto/oauth-scopes";
import { AtriumError } from "../errors/atrium-error.ts";
import { InsufficientScopeError } from "../oauth/errors/oauth-error.ts";
import {
  parseItems,
  withdrawsAccount,
  withdrawsBlob,
  withdrawsIdentity,
  withdrawsRepo,
  withdrawsRpc,
  type PermissionItem,
} from "../oauth/scopes/permission-items.ts";

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

/** The 403 for a permission the account holder took back (docs/decisions/0053), naming it as a missing one is named. */
function takenBack(needed: string): InsufficientScopeError {
  return new InsufficientScopeError(`Missing permission: ${needed} (the account holder took it back from this app)`);
}

/** Parsed permissions per scope and taken-back list: grants share few distinct ones, and parsing is per request otherwise. */
const permissionsByScope = new Map<string, OAuthPermissions>();
const MAX_CACHED_SCOPES = 1000;

/**
 * An OAuth token's permissions (resource/resource-auth.ts's CallerPermissions): its scope, matched by the library,
 * less what the account holder took back from the app since (`withdrawn`, docs/decisions/0053), which is refused
 * whatever the scope says. A missing permission is 403 with the DPoP `insufficient_scope` challenge.
 */
export class OAuthPermissions {
  private constructor(
    readonly scope: AtriumScopePermissions,
    private readonly withdrawn: readonly PermissionItem[],
  ) {}

  static of(scope: string, withdrawn = ""): OAuthPermissions {
    const key = withdrawn === "" ? scope : `${scope}\n${withdrawn}`;
    let permissions = permissionsByScope.get(key);
    if (!permissions) {
      permissions = new OAuthPermissions(new AtriumScopePermissions(scope), parseItems(withdrawn));
      if (permissionsByScope.size >= MAX_CACHED_SCOPES) permissionsByScope.clear();
      permissionsByScope.set(key, permissions);
    }
    return permissions;
  }

  requireRepo(collection: string, action: "create" | "update" | "delete"): void {
    if (withdrawsRepo(this.withdrawn, collection, action)) throw takenBack(RepoPermission.scopeNeededFor({ collection, action }));
    requirePermission(() => this.scope.assertRepo({ collection, action }));
  }

  requireBlob(mime: string): void {
    if (withdrawsBlob(this.withdrawn, mime)) throw takenBack(BlobPermission.scopeNeededFor({ mime }));
    requirePermission(() => this.scope.assertBlob({ mime }));
  }

  requireRpc(lxm: string, aud: string): void {
    if (withdrawsRpc(this.withdrawn, lxm, aud)) throw takenBack(RpcPermission.scopeNeededFor({ lxm, aud }));
    requirePermission(() => this.scope.assertRpc({ lxm, aud }));
  }

  requireIdentity(attr: "handle" | "*"): void {
    if (withdrawsIdentity(this.withdrawn, attr)) throw takenBack(IdentityPermission.scopeNeededFor({ attr }));
    requirePermission(() => this.scope.assertIdentity({ attr }));
  }

  canReadEmail(): boolean {
    return !withdrawsAccount(this.withdrawn, "email", "read") && this.scope.allowsAccount({ attr: "email", action: "read" });
  }

  requireEmailManagement(): void {
    requirePermission(() => this.scope.assertAccount({ attr: "email", action: "manage" }));
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

