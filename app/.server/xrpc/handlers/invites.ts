import { isValidDid } from "@atproto/syntax";
import { z } from "zod";
import { ADMIN_ACCOUNT, type InviteCodeDetail } from "../../accounts/invite-store.ts";
import type { XrpcMethods } from "../xrpc-method.ts";
import { invalidRequest } from "../xrpc-error.ts";

/**
 * Invite codes over XRPC (docs/decisions/0052), as the reference PDS serves them so that its `pdsadmin` works
 * unmodified: the operator's methods behind HTTP Basic admin:<ATRIUM_ADMIN_PASSWORD> (com.atproto.server.createInviteCode(s),
 * com.atproto.admin.getInviteCodes, disableInviteCodes, disableAccountInvites, enableAccountInvites), and the account's
 * own codes (getAccountInviteCodes) for its password session, never for an OAuth token, as the reference's.
 */

/** An account a code is for: a DID, or the reference's "admin" (the default). */
const forAccount = z.string().max(2048).refine((value) => value === ADMIN_ACCOUNT || isValidDid(value), "forAccount must be a DID");
const did = z.string().max(2048).refine(isValidDid, "account must be a DID");
/** The lexicons set no upper bound; these keep one call's rows within reason. */
const useCount = z.number().int().min(1).max(1_000_000);
const MAX_CODES_PER_CALL = 1000;

const createInviteCodeInput = z.object({ useCount, forAccount: forAccount.optional() });
const createInviteCodesInput = z.object({
  codeCount: z.number().int().min(1).max(MAX_CODES_PER_CALL).default(1),
  useCount,
  forAccounts: z.array(forAccount).min(1).max(MAX_CODES_PER_CALL).optional(),
});
const disableInviteCodesInput = z.object({ codes: z.array(z.string().max(1024)).max(MAX_CODES_PER_CALL).optional(), accounts: z.array(z.string().max(2048)).max(MAX_CODES_PER_CALL).optional() });
const accountInvitesInput = z.object({ account: did, note: z.string().max(10_000).optional() });

/** A query's boolean parameter as the lexicon writes it: "true" or "false", else the default. */
function booleanParam(params: URLSearchParams, name: string, fallback: boolean): boolean {
  const value = params.get(name);
  if (value === null) return fallback;
  if (value === "true" || value === "false") return value === "true";
  throw invalidRequest(`${name} must be true or false`);
}

/** com.atproto.server.defs#inviteCode. */
function inviteCodeView(code: InviteCodeDetail) {
  return {
    code: code.code,
    available: code.availableUses,
    disabled: code.disabled,
    forAccount: code.forAccount,
    createdBy: code.createdBy,
    createdAt: new Date(code.createdAt).toISOString(),
    uses: code.uses.map((use) => ({ usedBy: use.usedBy, usedAt: new Date(use.usedAt).toISOString() })),
  };
}

export const inviteMethods: XrpcMethods = {
  "com.atproto.server.createInviteCode": {
    type: "procedure",
    auth: "admin",
    input: "json",
    handler: async ({ services }, body) => {
      const input = createInviteCodeInput.parse(body);
      return { code: await services.invites.create(input.useCount, input.forAccount) };
    },
  },

  "com.atproto.server.createInviteCodes": {
    type: "procedure",
    auth: "admin",
    input: "json",
    handler: async ({ services }, body) => {
      const input = createInviteCodesInput.parse(body);
      if (input.codeCount * (input.forAccounts?.length ?? 1) > MAX_CODES_PER_CALL) throw invalidRequest(`At most ${MAX_CODES_PER_CALL} codes per call`);
      return { codes: await services.invites.createMany(input.codeCount, input.useCount, input.forAccounts) };
    },
  },

  "com.atproto.server.getAccountInviteCodes": {
    type: "query",
    auth: "required",
    handler: async ({ services, caller, params }) => {
      caller.requireAccountManagement("com.atproto.server.getAccountInviteCodes");
      const codes = await services.invites.ofAccount(caller.did, {
        includeUsed: booleanParam(params, "includeUsed", true),
        createAvailable: booleanParam(params, "createAvailable", true),
      });
      return { codes: codes.map(inviteCodeView) };
    },
  },

  "com.atproto.admin.getInviteCodes": {
    type: "query",
    auth: "admin",
    handler: async ({ services, params }) => {
      const sort = params.get("sort") ?? "recent";
      if (sort !== "recent" && sort !== "usage") throw invalidRequest(`unknown sort method: ${sort}`);
      const limitText = params.get("limit") ?? "100";
      const limit = /^\d+$/.test(limitText) ? Number(limitText) : NaN;
      if (!(limit >= 1 && limit <= 500)) throw invalidRequest("limit must be a whole number from 1 to 500");
      const page = await services.invites.page(sort, limit, params.get("cursor") ?? undefined);
      return { ...(page.cursor ? { cursor: page.cursor } : {}), codes: page.codes.map(inviteCodeView) };
    },
  },

  "com.atproto.admin.disableInviteCodes": {
    type: "procedure",
    auth: "admin",
    input: "json",
    handler: async ({ services }, body) => {
      const input = disableInviteCodesInput.parse(body);
      await services.invites.disable({ codes: input.codes ?? [], accounts: input.accounts ?? [] });
      return {};
    },
  },

  "com.atproto.admin.disableAccountInvites": {
    type: "procedure",
    auth: "admin",
    input: "json",
    handler: async ({ services }, body) => {
      await services.invites.setAccountInvites(accountInvitesInput.parse(body).account, false);
      return {};
    },
  },

  "com.atproto.admin.enableAccountInvites": {
    type: "procedure",
    auth: "admin",
    input: "json",
    handler: async ({ services }, body) => {
      await services.invites.setAccountInvites(accountInvitesInput.parse(body).account, true);
      return {};
    },
  },
};
