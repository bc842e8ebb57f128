import { z } from "zod";
import { hasCode } from "../../errors/atrium-error.ts";
import { HandleError, type HandleRefusal } from "../../accounts/handle-rules.ts";
import type { Services } from "../../services.ts";
import type { XrpcMethods } from "../xrpc-method.ts";
import { invalidRequest, XrpcError } from "../xrpc-error.ts";

const updateHandleInput = z.object({ handle: z.string().max(253) });

/** The reference PDS's error names for a refused handle (accounts/handle-rules.ts decides). */
const HANDLE_ERROR_NAMES: Record<HandleRefusal, string> = {
  syntax: "InvalidHandle",
  disallowed_tld: "InvalidHandle",
  characters: "InvalidHandle",
  too_short: "InvalidHandle",
  too_long: "InvalidHandle",
  reserved: "HandleNotAvailable",
  unsupported_domain: "UnsupportedDomain",
};

export const identityMethods: XrpcMethods = {
  /** The DID of a handle hosted here; 400 InvalidRequest when unknown (as the reference PDS answers). */
  "com.atproto.identity.resolveHandle": {
    type: "query",
    auth: "none",
    handler: async ({ services, params }) => {
      const handle = params.get("handle");
      if (!handle) throw invalidRequest('Params must have the property "handle"');
      const account = await services.accounts.findByHandle(handle);
      if (!account) throw invalidRequest("Unable to resolve handle");
      return { did: account.did };
    },
  },

  /**
   * identity:handle (or transition:generic, docs/architecture.md, "Scopes and the data server"). Only a handle under
   * this server's own domains, by the one rule every way in uses (AccountManager.updateHandle, accounts/handle-rules.ts).
   */
  "com.atproto.identity.updateHandle": {
    type: "procedure",
    auth: "required",
    input: "json",
    handler: async ({ services, caller }, body) => {
      caller.requireIdentity("handle");
      const { handle } = updateHandleInput.parse(body);
      await updateHandleOrRefuse(services, caller.did, handle);
      return {};
    },
  },
};

/**
 * Gives the account `handle` by the one rule every way in uses (the person's updateHandle, the operator's
 * updateAccountHandle), a refusal answered with the reference's error name.
 */
export async function updateHandleOrRefuse(services: Services, did: string, handle: string): Promise<void> {
  try {
    await services.accounts.updateHandle(did, handle);
  } catch (error) {
    if (error instanceof HandleError) throw new XrpcError(400, HANDLE_ERROR_NAMES[error.reason], error.message);
    if (hasCode(error, "handle_taken")) throw new XrpcError(400, "HandleNotAvailable", error.message);
    throw error;
  }
}
