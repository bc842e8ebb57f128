import { describe, expect, it } from "vitest";
import { hasCode } from "../errors/atrium-error.ts";
import { bearerJwt } from "./resource-auth.ts";
import { PasswordSessionPermissions } from "./password-session-permissions.ts";
import { OAuthPermissions } from "./scope-permissions.ts";

function refused(check: () => void): { status: number; xrpcName?: string } | undefined {
  try {
    check();
    return undefined;
  } catch (error) {
    if (!hasCode(error, "password_session_scope", "forbidden", "insufficient_scope")) throw error;
    return { status: error.status, xrpcName: error.xrpcName };
  }
}

const full = PasswordSessionPermissions.of("com.atproto.access");
const privileged = PasswordSessionPermissions.of("com.atproto.appPassPrivileged");
const appPassword = PasswordSessionPermissions.of("com.atproto.appPass");
const BAD_TOKEN = { status: 400, xrpcName: "InvalidToken" };

/** What each kind of password session may do (docs/decisions/0047), as the reference rules it by auth scope. */
describe("password session permissions", () => {
  it("every kind writes records and blobs, reads the email, and lists or revokes app passwords", () => {
    for (const permissions of [full, privileged, appPassword]) {
      expect(refused(() => permissions.requireRepo())).toBeUndefined();
      expect(refused(() => permissions.requireBlob())).toBeUndefined();
      expect(refused(() => permissions.requirePasswordSession())).toBeUndefined();
      expect(refused(() => permissions.requireRpc("app.bsky.feed.getTimeline"))).toBeUndefined();
      expect(permissions.canReadEmail()).toBe(true);
    }
  });

  it("chat.bsky.* and createAccount service tokens: the account's password or a privileged app password", () => {
    for (const lxm of ["chat.bsky.convo.listConvos", "chat.bsky.convo.sendMessage", "com.atproto.server.createAccount"]) {
      expect(refused(() => full.requireRpc(lxm))).toBeUndefined();
      expect(refused(() => privileged.requireRpc(lxm))).toBeUndefined();
      expect(refused(() => appPassword.requireRpc(lxm))).toEqual(BAD_TOKEN);
    }
  });

  it("the handle and account management: the account's own password only", () => {
    expect(refused(() => full.requireIdentity())).toBeUndefined();
    expect(refused(() => full.requireAccountManagement("com.atproto.server.createAppPassword"))).toBeUndefined();
    for (const permissions of [privileged, appPassword]) {
      expect(refused(() => permissions.requireIdentity())).toEqual(BAD_TOKEN);
      expect(refused(() => permissions.requireAccountManagement("com.atproto.server.createAppPassword"))).toEqual(BAD_TOKEN);
    }
  });

  it("an OAuth token, whatever its scope, is refused account management and app passwords (403)", () => {
    const oauth = OAuthPermissions.of("atproto transition:generic transition:email transition:chat.bsky");
    expect(refused(() => oauth.requireAccountManagement("com.atproto.server.createAppPassword"))).toEqual({ status: 403, xrpcName: "Forbidden" });
    expect(refused(() => oauth.requirePasswordSession("com.atproto.server.listAppPasswords"))).toEqual({ status: 403, xrpcName: "Forbidden" });
  });
});

describe("which credential a request carries", () => {
  it("Bearer with a JWT is a password session's; anything else goes to the OAuth verifier (which refuses a Bearer OAuth token)", () => {
    expect(bearerJwt("Bearer eyJh.eyJz.c2ln")).toBe("eyJh.eyJz.c2ln");
    expect(bearerJwt("  bearer   eyJh.eyJz.c2ln ")).toBe("eyJh.eyJz.c2ln");
    for (const header of [null, "", "Bearer tok-abc", "DPoP eyJh.eyJz.c2ln", "Bearer a.b", "Bearer a.b.c.d", "Bearer eyJh.eyJz.c2ln extra", "Basic eyJh.eyJz.c2ln"]) {
      expect(bearerJwt(header), String(header)).toBeUndefined();
    }
  });
});
