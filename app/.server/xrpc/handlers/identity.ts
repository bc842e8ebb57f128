import { z } from "zod";
import { hasCode } from "../../errors/atrium-error.ts";
import { isHandle } from "../../accounts/identifiers.ts";
import type { Services } from "../../services.ts";
import type { XrpcMethods } from "../xrpc-method.ts";
import { invalidRequest, XrpcError } from "../xrpc-error.ts";

const updateHandleInput = z.object({ handle: z.string().max(253) });

/**
 * A handle this server may give an account (the person's updateHandle, the operator's updateAccountHandle): a domain
 * name under one of its own domains, since proving control of another domain (DNS/HTTP) is not offered.
 */
export function requireHostedHandle(services: Services, handle: string): void {
  if (!isHandle(handle)) throw new XrpcError(400, "InvalidHandle", "handle must be a domain name such as alice.example.com");
  const domains = services.config.userDomains;
  if (!domains.some((domain) => handle.toLowerCase().endsWith(domain.startsWith(".") ? domain : `.${domain}`))) {
    throw new XrpcError(400, "UnsupportedDomain", `Handles on this server must end with ${domains.join(" or ")}`);
  }
}

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

  /** identity:handle (or transition:generic, docs/architecture.md, "Scopes and the data server"). */
  "com.atproto.identity.updateHandle": {
    type: "procedure",
    auth: "required",
    input: "json",
    handler: async ({ services, caller }, body) => {
      caller.requireIdentity("handle");
      const { handle } = updateHandleInput.parse(body);
      requireHostedHandle(services, handle);
      try {
        await services.accounts.updateHandle(caller.did, handle);
      } catch (error) {
        if (hasCode(error, "handle_taken")) throw new XrpcError(400, "HandleNotAvailable", error.message);
        if (hasCode(error, "handle_invalid")) throw new XrpcError(400, "InvalidHandle", error.message);
        throw error;
      }
      return {};
    },
  },
};
