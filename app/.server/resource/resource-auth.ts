import type { AccountState } from "../accounts/account-status.ts";
import type { AccessTokenVerifier } from "../oauth/token/access-token-verifier.ts";
import type { Grant } from "../oauth/token/grant-store.ts";
import { AtriumScopePermissions, requirePermission } from "./scope-permissions.ts";

/** The caller of an authenticated /xrpc request, as its access token describes it. */
/** Parsed permissions per scope string: grants share few distinct scopes, and parsing is per request otherwise. */
const permissionsByScope = new Map<string, AtriumScopePermissions>();
const MAX_CACHED_SCOPES = 1000;

function permissionsFor(scope: string): AtriumScopePermissions {
  let permissions = permissionsByScope.get(scope);
  if (!permissions) {
    permissions = new AtriumScopePermissions(scope);
    if (permissionsByScope.size >= MAX_CACHED_SCOPES) permissionsByScope.clear();
    permissionsByScope.set(scope, permissions);
  }
  return permissions;
}

export class ResourceCaller {
  readonly permissions: AtriumScopePermissions;

  constructor(
    readonly did: string,
    readonly handle: string,
    readonly grant: Grant,
    /** What the presented access token may do (its grant's scope, or a narrower one). */
    readonly scope: string,
    /**
     * The account's state (accounts/account-status.ts): the router refuses a deactivated account's calls but
     * getSession (docs/decisions/0031), a taken-down account's but those a takedown leaves the person
     * (docs/decisions/0051).
     */
    readonly accountState: AccountState = "active",
  ) {
    this.permissions = permissionsFor(scope);
  }

  requireRepo(collection: string, action: "create" | "update" | "delete"): void {
    requirePermission(() => this.permissions.assertRepo({ collection, action }));
  }

  requireBlob(mime: string): void {
    requirePermission(() => this.permissions.assertBlob({ mime }));
  }

  requireRpc(lxm: string, aud: string): void {
    requirePermission(() => this.permissions.assertRpc({ lxm, aud }));
  }

  requireIdentity(attr: "handle" | "*"): void {
    requirePermission(() => this.permissions.assertIdentity({ attr }));
  }

  canReadEmail(): boolean {
    return this.permissions.allowsAccount({ attr: "email", action: "read" });
  }
}

export type ResourceRequest = { authorization: string | null; dpop: string | null; method: string; url: string };

/** Verifies the DPoP-bound access token of a data-server request (docs/architecture.md, "DPoP", RFC 9449 §7). */
export async function authenticateCaller(verifier: AccessTokenVerifier, request: ResourceRequest): Promise<ResourceCaller> {
  const subject = await verifier.verify(request);
  return new ResourceCaller(subject.did, subject.handle, subject.grant, subject.scope, subject.accountState);
}
