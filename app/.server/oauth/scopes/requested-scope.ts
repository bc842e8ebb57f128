import { IncludeScope, isAtprotoOauthScope, normalizeAtprotoOauthScopeValue } from "@atproto/oauth-scopes";
import { InvalidScopeError } from "../errors/oauth-error.ts";
import { PermissionSetResolutionError, type PermissionSetResolver } from "./permission-sets/permission-set-resolver.ts";

/** A permission set the person is asked to grant, kept for the consent screen. */
export type PermissionSetGrant = { include: string; nsid: string; title?: string; detail?: string; scopes: string[] };

export type ResolvedScope = { scope: string; permissionSets: PermissionSetGrant[] };

/**
 * Resolves the scope a client asks for at PAR (docs/architecture.md, "Scopes and the data server"):
 * - values this server does not understand are dropped, not fatal;
 * - every value kept must be one the client declared in its metadata;
 * - `atproto` is required;
 * - `include:<nsid>` is resolved through the permission-set resolver and
 *   replaced by the repo:/rpc: permissions it expands to, so that the grant
 *   and the token hold concrete permissions and resource checks never touch
 *   the network. Without a resolver, include: is not understood (dropped);
 *   with one, a set that cannot be resolved fails the request.
 */
export async function resolveRequestedScope(
  requested: string | undefined,
  declared: readonly string[],
  resolver?: PermissionSetResolver,
): Promise<ResolvedScope> {
  if (requested === undefined || requested.trim() === "") throw new InvalidScopeError('scope is required and must include "atproto"');
  const declaredSet = new Set(declared.map(normalizeValue));
  const kept = new Set<string>();
  const permissionSets: PermissionSetGrant[] = [];
  for (const value of requested.split(" ").filter(Boolean)) {
    if (!isAtprotoOauthScope(value)) continue;
    const include = value.startsWith("include:") ? IncludeScope.fromString(value) : null;
    if (value.startsWith("include:") && (!include || !resolver)) continue;
    const normalized = normalizeValue(value);
    if (!declaredSet.has(normalized)) throw new InvalidScopeError(`Scope "${value}" is not declared in the client's metadata`);
    if (include && resolver) {
      const grant = await expandPermissionSet(include, normalized, resolver);
      permissionSets.push(grant);
      for (const scope of grant.scopes) kept.add(scope);
    } else {
      kept.add(normalized);
    }
  }
  if (!kept.has("atproto")) throw new InvalidScopeError('scope must include "atproto"');
  return { scope: [...kept].join(" "), permissionSets };
}

async function expandPermissionSet(include: IncludeScope, value: string, resolver: PermissionSetResolver): Promise<PermissionSetGrant> {
  try {
    const set = await resolver.resolve(include.nsid);
    // The library applies the spec's rules: only repo and rpc entries under the set's namespace, inheritAud.
    const scopes = [...new Set(include.toScopes(set).map(String))];
    return { include: value, nsid: include.nsid, title: set.title, detail: set.detail, scopes };
  } catch (error) {
    const reason = error instanceof PermissionSetResolutionError ? error.message : "resolution failed";
    throw new InvalidScopeError(`Permission set ${include.nsid} could not be resolved: ${reason}`);
  }
}

function normalizeValue(value: string): string {
  return normalizeAtprotoOauthScopeValue(value) ?? value;
}
