import { describe, expect, it } from "vitest";
import { InvalidScopeError } from "../errors/oauth-error.ts";
import { resolveRequestedScope } from "./requested-scope.ts";

// These tests cover resolveRequestedScope without a permission-set resolver:
// include: values are then not understood and are dropped.

const declared = ["atproto", "transition:generic", "repo:app.bsky.feed.post?action=create", "blob:*/*", "include:com.example.perms"];

async function scope(requested: string | undefined, declaredScopes: readonly string[] = declared): Promise<string> {
  const result = await resolveRequestedScope(requested, declaredScopes);
  return result.scope;
}

async function refusal(promise: Promise<unknown>): Promise<InvalidScopeError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidScopeError);
    expect((error as InvalidScopeError).code).toBe("invalid_scope");
    return error as InvalidScopeError;
  }
  throw new Error("expected InvalidScopeError");
}

describe("resolveRequestedScope (no permission-set resolver)", () => {
  it("keeps declared values in request order", async () => {
    expect(await scope("atproto transition:generic")).toBe("atproto transition:generic");
    expect(await scope("transition:generic atproto")).toBe("transition:generic atproto");
  });

  it("accepts a subset of the declared scope and reports no permission sets", async () => {
    const result = await resolveRequestedScope("atproto", declared);
    expect(result.scope).toBe("atproto");
    expect(result.permissionSets).toEqual([]);
  });

  it.each([undefined, "", "   "])("requires a scope (%j)", async (requested) => {
    expect((await refusal(scope(requested))).message).toMatch(/atproto/);
  });

  it("requires atproto", async () => {
    expect((await refusal(scope("transition:generic"))).message).toMatch(/atproto/);
  });

  it("requires atproto even when only unknown values remain", async () => {
    await refusal(scope("openid profile"));
  });

  it("refuses a known value the client did not declare", async () => {
    const error = await refusal(scope("atproto transition:email"));
    expect(error.message).toMatch(/transition:email/);
    await refusal(scope("atproto repo:app.bsky.feed.like"));
  });

  it("refuses atproto itself when the client did not declare it", async () => {
    await refusal(scope("atproto", ["transition:generic"]));
  });

  it("drops values it does not understand instead of failing", async () => {
    expect(await scope("atproto openid profile email foo:bar")).toBe("atproto");
  });

  it("collapses duplicates", async () => {
    expect(await scope("atproto atproto transition:generic atproto transition:generic")).toBe("atproto transition:generic");
  });

  it("tolerates repeated spaces", async () => {
    expect(await scope("  atproto   transition:generic ")).toBe("atproto transition:generic");
  });

  it("drops include: values, declared or not", async () => {
    const result = await resolveRequestedScope("atproto include:com.example.perms", declared);
    expect(result.scope).toBe("atproto");
    expect(result.permissionSets).toEqual([]);
    // Undeclared include: values are dropped too, not refused.
    expect(await scope("atproto include:org.other.perms")).toBe("atproto");
  });

  it("compares permission scopes in normalised form", async () => {
    // The query form and the positional form of the same repo permission.
    expect(await scope("atproto repo?collection=app.bsky.feed.post&action=create")).toBe("atproto repo:app.bsky.feed.post?action=create");
    expect(await scope("atproto blob?accept=*/*")).toBe("atproto blob:*/*");
    // Two spellings of one permission collapse to one value.
    expect(await scope("atproto repo:app.bsky.feed.post?action=create repo?collection=app.bsky.feed.post&action=create")).toBe(
      "atproto repo:app.bsky.feed.post?action=create",
    );
  });

  it("matches a declaration written in a non-canonical form", async () => {
    expect(await scope("atproto blob:*/*", ["atproto", "blob?accept=*/*"])).toBe("atproto blob:*/*");
  });
});
