import { z } from "zod";
import { illFormedStringIn } from "../../repo/record-data.ts";
import type { XrpcMethods } from "../xrpc-method.ts";

const putPreferencesInput = z.object({
  preferences: z
    .array(z.object({ $type: z.string().regex(/^app\.bsky\./, "preferences must be app.bsky.* types") }).passthrough())
    .max(500)
    // Kept as JSON and given back to apps: Unicode strings only, as records (record-data.ts, issue 28 item 10).
    .superRefine((preferences, context) => {
      const illFormed = illFormedStringIn(preferences);
      if (illFormed !== undefined) context.addIssue({ code: "custom", message: `${illFormed} is not well-formed Unicode (it holds a lone surrogate)` });
    }),
});

/**
 * app.bsky.actor preferences are stored by the PDS but permissioned as calls
 * to the configured app view: rpc:<method>?aud=<app view>, as the reference
 * PDS does.
 */
export const preferenceMethods: XrpcMethods = {
  "app.bsky.actor.getPreferences": {
    type: "query",
    auth: "required",
    handler: async ({ services, caller }) => {
      caller.requireRpc("app.bsky.actor.getPreferences", services.config.appview);
      return { preferences: await services.repo.getPreferences(caller.did) };
    },
  },
  "app.bsky.actor.putPreferences": {
    type: "procedure",
    auth: "required",
    input: "json",
    handler: async ({ services, caller }, body) => {
      caller.requireRpc("app.bsky.actor.putPreferences", services.config.appview);
      const { preferences } = putPreferencesInput.parse(body);
      await services.repo.putPreferences(caller.did, preferences, services.now());
      return {};
    },
  },
};
