import { z } from "zod";
import type { ListedAppPassword } from "../../accounts/app-password-store.ts";
import type { XrpcMethods } from "../xrpc-method.ts";

const createInput = z.object({ name: z.string().max(1024), privileged: z.boolean().optional() });
const revokeInput = z.object({ name: z.string().max(1024) });

const CREATE = "com.atproto.server.createAppPassword";
const LIST = "com.atproto.server.listAppPasswords";
const REVOKE = "com.atproto.server.revokeAppPassword";

/**
 * App passwords over XRPC (docs/decisions/0047), as the reference PDS rules them: only the account's own password
 * session creates one; an app-password session lists and revokes them too; no OAuth token does any of it. The account
 * pages do the same (/account/app-passwords).
 */
export const appPasswordMethods: XrpcMethods = {
  [CREATE]: {
    type: "procedure",
    auth: "required",
    input: "json",
    handler: async ({ services, caller }, body) => {
      caller.requireAccountManagement(CREATE);
      const input = createInput.parse(body);
      const created = await services.appPasswords.create(caller.did, input.name, input.privileged ?? false);
      return { name: created.name, password: created.password, createdAt: created.createdAt.toISOString(), privileged: created.privileged };
    },
  },

  [LIST]: {
    type: "query",
    auth: "required",
    handler: async ({ services, caller }) => {
      caller.requirePasswordSession(LIST);
      return { passwords: (await services.appPasswords.list(caller.did)).map(listed) };
    },
  },

  [REVOKE]: {
    type: "procedure",
    auth: "required",
    input: "json",
    handler: async ({ services, caller }, body) => {
      caller.requirePasswordSession(REVOKE);
      await services.appPasswords.revoke(caller.did, revokeInput.parse(body).name);
      return {};
    },
  },
};

function listed(appPassword: ListedAppPassword) {
  return { name: appPassword.name, createdAt: new Date(appPassword.createdAt).toISOString(), privileged: appPassword.privileged };
}
