import { z } from "zod";
import { hasCode } from "../../errors/atrium-error.ts";
import { HandleError, type HandleRefusal } from "../../accounts/handle-rules.ts";
import { DEFAULT_LANGUAGE } from "../../../i18n/languages.ts";
import { fromAcceptLanguage } from "../../i18n/screen-language.ts";
import { signPlcOperationInput, submitPlcOperationInput } from "../../identity/plc-operation-input.ts";
import type { ResourceCaller } from "../../resource/resource-auth.ts";
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

/**
 * Who may operate on the account's DID itself (request a code, have this server sign an operation, submit one:
 * docs/decisions/0050), as the reference PDS allows it: an OAuth app needs `identity:*` (transition:generic includes
 * it); a password session with full access may; an app password never. The one place the rule is written: each kind
 * of caller answers through `requireIdentity` (an app password's session is refused there: resource/password-session-
 * permissions.ts).
 */
export function requireIdentityControl(caller: ResourceCaller): void {
  caller.requireIdentity("*");
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
      try {
        await services.accounts.updateHandle(caller.did, handle);
      } catch (error) {
        if (error instanceof HandleError) throw new XrpcError(400, HANDLE_ERROR_NAMES[error.reason], error.message);
        if (hasCode(error, "handle_taken")) throw new XrpcError(400, "HandleNotAvailable", error.message);
        throw error;
      }
      return {};
    },
  },

  /**
   * The credentials this server would have the account's DID document name (the first step of moving an account
   * here): any authenticated caller of the account, as the reference answers it; nothing in it is secret.
   */
  "com.atproto.identity.getRecommendedDidCredentials": {
    type: "query",
    auth: "required",
    handler: async ({ services, caller }) => services.plcOperations.recommendedCredentials(caller.did),
  },

  /** Emails the code that signPlcOperation takes (15 minutes, single use, five tries). */
  "com.atproto.identity.requestPlcOperationSignature": {
    type: "procedure",
    auth: "required",
    input: "none",
    handler: async ({ services, caller, request }) => {
      requireIdentityControl(caller);
      const language = fromAcceptLanguage(request.headers.get("accept-language")) ?? DEFAULT_LANGUAGE;
      await services.plcOperations.requestSignature(caller.did, request.clientAddress, language);
      return {};
    },
  },

  /** The DID's next operation, with the fields given, signed with this server's rotation key on the emailed code. */
  "com.atproto.identity.signPlcOperation": {
    type: "procedure",
    auth: "required",
    input: "json",
    handler: async ({ services, caller }, body) => {
      requireIdentityControl(caller);
      const parsed = signPlcOperationInput.safeParse(body);
      if (!parsed.success) throw invalidRequest(`Input ${parsed.error.issues[0]?.path.join(".") ?? ""} ${parsed.error.issues[0]?.message ?? "is invalid"}`);
      return { operation: await services.plcOperations.sign(caller.did, parsed.data) };
    },
  },

  /** A signed operation that keeps this server's key, endpoint, signing key and handle, sent to the directory. */
  "com.atproto.identity.submitPlcOperation": {
    type: "procedure",
    auth: "required",
    input: "json",
    handler: async ({ services, caller }, body) => {
      requireIdentityControl(caller);
      const { operation } = submitPlcOperationInput.parse(body);
      await services.plcOperations.submit(caller.did, operation);
      return {};
    },
  },
};
