import { isAtprotoOauthScope, normalizeAtprotoOauthScopeValue } from "@atproto/oauth-scopes";
import { InvalidScopeError } from "../errors/oauth-error.ts";

/**
 * Resolves the scope a client asks for at PAR (DESIGN 5): values this server
 * does not understand are dropped, not fatal; every value kept must be one
 * the client declared in its metadata; `atproto` is required.
 *
 * `include:` values need a permission-set resolver (a later capability):
 * without one they are not understood here and are dropped.
 */
export function resolveRequestedScope(requested: string | undefined, declared: readonly string[]): string {
  if (requested === undefined || requested.trim() === "") throw new InvalidScopeError('scope is required and must include "atproto"');
  const declaredSet = new Set(declared.map(normalizeValue));
  const kept: string[] = [];
  for (const value of requested.split(" ").filter(Boolean)) {
    if (!isAtprotoOauthScope(value) || value.startsWith("include:")) continue;
    const normalized = normalizeValue(value);
    if (!declaredSet.has(normalized)) {
      throw new InvalidScopeError(`Scope "${value}" is not declared in the client's metadata`);
    }
    if (!kept.includes(normalized)) kept.push(normalized);
  }
  if (!kept.includes("atproto")) throw new InvalidScopeError('scope must include "atproto"');
  return kept.join(" ");
}

function normalizeValue(value: string): string {
  return normalizeAtprotoOauthScopeValue(value) ?? value;
}
