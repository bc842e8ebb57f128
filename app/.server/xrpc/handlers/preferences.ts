import { z } from "zod";
import { illFormedStringIn } from "../../repo/record-data.ts";
import { isPreferenceType, preferencesToRead, preferencesToWrite } from "../../repo/preferences.ts";
import type { XrpcMethods } from "../xrpc-method.ts";

const putPreferencesInput = z.object({
  preferences: z
    .array(z.object({ $type: z.string().refine(isPreferenceType, "preferences must be app.bsky.* types") }).passthrough())
    .max(500)
    // Kept as JSON and given back to apps: Unicode strings only, as records (record-data.ts, issue 28 item 10).
    .superRefine((preferences, context) => {
      const illFormed = illFormedStringIn(preferences);
      if (illFormed !== undefined) context.addIssue({ code: "custom", message: `${illFormed} is not well-formed Unicode (it holds a lone surrogate)` });
    }),
});

/**
 * app.bsky.actor preferences are stored by the PDS but permissioned as calls to the configured app view:
 * rpc:<method>?aud=<app view>, as the reference PDS does. What a caller reads and writes follows repo/preferences.ts:
 * the birth date only for a full-access session, which no OAuth app is; the declared age computed on read.
 */
export const preferenceMethods: XrpcMethods = {
  "app.bsky.actor.getPreferences": {
    type: "query",
    auth: "required",
    handler: async ({ services, caller }) => {
      caller.requireRpc("app.bsky.actor.getPreferences", services.config.appview);
      const stored = await services.repo.getPreferences(caller.did);
      return { preferences: preferencesToRead(stored, { fullAccess: caller.fullAccess }, services.now()) };
    },
  },
  "app.bsky.actor.putPreferences": {
    type: "procedure",
    auth: "required",
    input: "json",
    handler: async ({ services, caller }, body) => {
      caller.requireRpc("app.bsky.actor.putPreferences", services.config.appview);
      const { preferences } = putPreferencesInput.parse(body);
      const { written, keep } = preferencesToWrite(preferences, { fullAccess: caller.fullAccess });
      await services.repo.putPreferences(caller.did, written, services.now(), keep);
      return {};
    },
  },
};
