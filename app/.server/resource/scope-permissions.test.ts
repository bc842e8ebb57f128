import { describe, expect, it } from "vitest";
import { hasCode } from "../errors/atrium-error.ts";
import { OAuthPermissions } from "./scope-permissions.ts";

function refusal(check: () => void): string | undefined {
  try {
    check();
    return undefined;
  } catch (error) {
    if (!hasCode(error, "insufficient_scope")) throw error;
    expect(error.status).toBe(403);
    return error.message;
  }
}

/** An OAuth token's scope less what the account holder took back from the app (docs/decisions/0053). */
describe("OAuthPermissions with permissions taken back", () => {
  const APPVIEW = "did:web:api.bsky.app#bsky_appview";

  it("refuses what was taken back with 403 insufficient_scope naming it, and everything else as the scope says", () => {
    const permissions = OAuthPermissions.of("atproto repo:app.bsky.feed.post repo:app.bsky.feed.like", "repo:app.bsky.feed.like?action=create");
    expect(refusal(() => permissions.requireRepo("app.bsky.feed.like", "create"))).toMatch(/^Missing permission: repo:app\.bsky\.feed\.like\?action=create \(the account holder took it back/);
    expect(refusal(() => permissions.requireRepo("app.bsky.feed.like", "delete"))).toBeUndefined();
    expect(refusal(() => permissions.requireRepo("app.bsky.feed.post", "create"))).toBeUndefined();
    // Never granted: the library's refusal, as before.
    expect(refusal(() => permissions.requireRepo("app.bsky.graph.follow", "create"))).toBe("Missing permission: repo:app.bsky.graph.follow?action=create");
  });

  it("reaches inside a wildcard the scope cannot narrow: likes taken back from transition:generic", () => {
    const permissions = OAuthPermissions.of("atproto transition:generic transition:email", "repo:app.bsky.feed.like?action=create blob:video/* account:email?action=read");
    expect(refusal(() => permissions.requireRepo("app.bsky.feed.like", "create"))).toMatch(/repo:app\.bsky\.feed\.like\?action=create/);
    expect(refusal(() => permissions.requireRepo("app.bsky.feed.post", "create"))).toBeUndefined();
    expect(refusal(() => permissions.requireBlob("video/mp4"))).toMatch(/blob:video\/mp4/);
    expect(refusal(() => permissions.requireBlob("image/png"))).toBeUndefined();
    expect(permissions.canReadEmail()).toBe(false);
    expect(OAuthPermissions.of("atproto transition:generic transition:email").canReadEmail()).toBe(true);
  });

  it("calls and the identity", () => {
    const permissions = OAuthPermissions.of("atproto transition:generic transition:chat.bsky", `rpc:app.bsky.feed.getTimeline?aud=${APPVIEW.replace("#", "%23")} transition:chat.bsky identity:handle`);
    expect(refusal(() => permissions.requireRpc("app.bsky.feed.getTimeline", APPVIEW))).toMatch(/rpc:app\.bsky\.feed\.getTimeline/);
    expect(refusal(() => permissions.requireRpc("app.bsky.actor.getProfile", APPVIEW))).toBeUndefined();
    expect(refusal(() => permissions.requireRpc("chat.bsky.convo.listConvos", APPVIEW))).toMatch(/chat\.bsky\.convo\.listConvos/);
    expect(refusal(() => permissions.requireIdentity("handle"))).toMatch(/identity:handle/);
  });

  it("keeps one parsed set per scope and taken-back list", () => {
    expect(OAuthPermissions.of("atproto transition:generic", "identity:*")).toBe(OAuthPermissions.of("atproto transition:generic", "identity:*"));
    expect(OAuthPermissions.of("atproto transition:generic", "identity:*")).not.toBe(OAuthPermissions.of("atproto transition:generic"));
  });
});
