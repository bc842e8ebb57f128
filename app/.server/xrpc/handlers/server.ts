import { z } from "zod";
import { createServiceJwt } from "../../accounts/service-auth.ts";
import { canonicalNsid, isNsid } from "../../repo/identifiers.ts";
import { MINUTE, SECOND } from "../../util/time.ts";
import type { ResourceCaller } from "../../resource/resource-auth.ts";
import type { XrpcMethods } from "../xrpc-method.ts";
import { DEACTIVATED } from "../../accounts/account-status.ts";
import { invalidRequest, XrpcError } from "../xrpc-error.ts";
import { serverDid } from "../../config.ts";
import { isProtectedMethod } from "../protected-methods.ts";

const serviceAuthParams = z.object({
  aud: z.string().regex(/^did:[a-z]+:[a-zA-Z0-9._:%-]+(#[a-zA-Z0-9._-]+)?$/, "aud must be a DID"),
  // Canonical before the blocklist and the rpc: permission see it (CHAT.BSKY.… is chat.bsky.…).
  lxm: z.string().refine(isNsid, "lxm must be an NSID").transform(canonicalNsid).optional(),
  exp: z.coerce.number().int().positive().optional(),
});

/** The reference PDS's bounds: at most an hour, and at most a minute when no method is named. */
const MAX_SERVICE_TOKEN_LIFETIME = 60 * MINUTE;
const MAX_UNBOUND_SERVICE_TOKEN_LIFETIME = MINUTE;

export const serverMethods: XrpcMethods = {
  "com.atproto.server.describeServer": {
    type: "query",
    auth: "none",
    handler: ({ services }) => ({
      did: serverDid(services.config),
      availableUserDomains: services.config.userDomains,
      inviteCodeRequired: true,
      phoneVerificationRequired: false,
      links: {},
      contact: {},
    }),
  },

  /**
   * Any valid token reads its own session; email only with account:email (or transition:email), or a password
   * session (docs/decisions/0047). A deactivated
   * account's apps learn it here (the lexicon's `active`, `status`), the one call they may still make.
   */
  "com.atproto.server.getSession": {
    type: "query",
    auth: "required",
    handler: async ({ services, caller }) => {
      const status = caller.accountDeactivated ? { active: false, status: DEACTIVATED } : { active: true };
      const session: Record<string, unknown> = { did: caller.did, handle: caller.handle, ...status };
      if (caller.canReadEmail()) {
        const account = await services.accounts.emailOf(caller.did);
        if (account) {
          session.email = account.email;
          session.emailConfirmed = account.emailConfirmed;
          session.emailAuthFactor = account.emailAuthFactor;
        }
      }
      return session;
    },
  },

  /** A service JWT signed with the account's key, for rpc:<lxm>?aud=<aud>. */
  "com.atproto.server.getServiceAuth": {
    type: "query",
    auth: "required",
    handler: async ({ services, caller, params }) => {
      const input = serviceAuthParams.parse(Object.fromEntries(params));
      // Before the permission and anything signed: a service token must never let another service manage the
      // account (protected-methods.ts). The reference's answer: 400 InvalidRequest.
      if (input.lxm && isProtectedMethod(input.lxm)) {
        throw invalidRequest(`Service tokens for ${input.lxm} are never issued: it is account management, done at this server directly`);
      }
      requireServiceRpc(caller, input.lxm ?? "*", input.aud);
      const now = services.now();
      const maxLifetime = input.lxm ? MAX_SERVICE_TOKEN_LIFETIME : MAX_UNBOUND_SERVICE_TOKEN_LIFETIME;
      const expiresAt = input.exp === undefined ? now + MINUTE : input.exp * SECOND;
      if (expiresAt <= now) throw new XrpcError(400, "BadExpiration", "exp must be in the future");
      if (expiresAt - now > maxLifetime) {
        throw new XrpcError(400, "BadExpiration", `exp may be at most ${maxLifetime / SECOND} seconds away${input.lxm ? "" : " without lxm"}`);
      }
      const signingKey = await services.accounts.signingKeypair(caller.did);
      if (!signingKey) throw invalidRequest("The account has no signing key");
      return { token: await createServiceJwt({ iss: caller.did, aud: input.aud, lxm: input.lxm, expiresAt, signingKey, now }) };
    },
  },
};

const CREATE_ACCOUNT = "com.atproto.server.createAccount";

/**
 * The rpc: permission a service token needs. rpc: scopes name a service (`did#service`); a service token's `aud`
 * may be a bare DID (atproto service auth), as a new PDS asks for com.atproto.server.createAccount. For that method
 * the bare DID stands for the DID's PDS: `rpc:com.atproto.server.createAccount?aud=<did>#atproto_pds` covers it.
 */
function requireServiceRpc(caller: ResourceCaller, lxm: string, aud: string): void {
  if (lxm !== CREATE_ACCOUNT || aud.includes("#")) return caller.requireRpc(lxm, aud);
  try {
    caller.requireRpc(lxm, aud);
  } catch {
    caller.requireRpc(lxm, `${aud}#atproto_pds`);
  }
}

/**
 * Account management that no OAuth token may perform, whatever its scope:
 * these need the account's own password session (reference PDS behaviour).
 */
export const METHODS_REFUSED_FOR_OAUTH = new Set([
  "com.atproto.server.createAppPassword",
  "com.atproto.server.listAppPasswords",
  "com.atproto.server.revokeAppPassword",
  "com.atproto.server.deactivateAccount",
  "com.atproto.server.activateAccount",
  "com.atproto.server.deleteAccount",
  "com.atproto.server.requestAccountDelete",
  "com.atproto.server.requestEmailUpdate",
  "com.atproto.server.updateEmail",
  "com.atproto.server.requestEmailConfirmation",
  "com.atproto.server.confirmEmail",
]);
