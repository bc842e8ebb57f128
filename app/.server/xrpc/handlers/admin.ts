import { AtUri, isValidDid } from "@atproto/syntax";
import { z } from "zod";
import { hasCode } from "../../errors/atrium-error.ts";
import type { OperatorAccountRow } from "../../accounts/account-store.ts";
import type { TakedownChange } from "../../accounts/takedown-store.ts";
import { canonicalNsid, isCidString, isNsid, isRecordKey } from "../../repo/identifiers.ts";
import type { Services } from "../../services.ts";
import type { XrpcMethods } from "../xrpc-method.ts";
import { invalidRequest, XrpcError } from "../xrpc-error.ts";
import { updateHandleOrRefuse } from "./identity.ts";

/**
 * The reference PDS's admin methods an operator needs (com.atproto.admin.*, docs/decisions/0051), behind HTTP Basic
 * admin:<ATRIUM_ADMIN_PASSWORD> (the router checks it before any input is read: admin/admin-auth.ts), so that the
 * reference's pdsadmin scripts work unmodified. Every change is logged (event "admin"), with what it changed.
 */

const did = z.string().refine(isValidDid, "must be a DID");
const cid = z.string().refine(isCidString, "must be a CID");
/** com.atproto.admin.defs#statusAttr. */
const statusAttr = z.object({ applied: z.boolean(), ref: z.string().max(1024).optional() });

const repoRef = z.object({ $type: z.literal("com.atproto.admin.defs#repoRef"), did });
const strongRef = z.object({ $type: z.literal("com.atproto.repo.strongRef"), uri: z.string().max(8192), cid });
const repoBlobRef = z.object({ $type: z.literal("com.atproto.admin.defs#repoBlobRef"), did, cid, recordUri: z.string().max(8192).optional() });
const subject = z.discriminatedUnion("$type", [repoRef, strongRef, repoBlobRef], {
  errorMap: () => ({ message: "subject must be a com.atproto.admin.defs#repoRef, com.atproto.repo.strongRef or com.atproto.admin.defs#repoBlobRef" }),
});
type Subject = z.infer<typeof subject>;

const updateSubjectStatusInput = z.object({ subject, takedown: statusAttr.optional(), deactivated: statusAttr.optional() });

/** The most DIDs getAccountInfos reads at once (the lexicon sets none; pdsadmin asks one at a time). */
const MAX_INFOS = 100;

/** com.atproto.admin.defs#accountView, as the reference's formatAccountInfo writes it (no invites: docs/decisions/0051). */
function accountView(account: OperatorAccountRow) {
  return {
    did: account.did,
    handle: account.handle,
    email: account.email,
    indexedAt: iso(account.createdAt),
    ...(account.emailConfirmedAt !== null ? { emailConfirmedAt: iso(account.emailConfirmedAt) } : {}),
    ...(account.deactivatedAt !== null ? { deactivatedAt: iso(account.deactivatedAt) } : {}),
  };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

const notFound = (what = "Account not found") => new XrpcError(400, "NotFound", what);

/** A record's place from its at:// URI; the authority may be a handle of this server. */
async function recordOf(services: Services, uri: string): Promise<{ did: string; collection: string; rkey: string }> {
  let parsed: AtUri;
  try {
    parsed = new AtUri(uri);
  } catch {
    throw invalidRequest("uri must be an at:// URI of a record");
  }
  if (!isNsid(parsed.collection) || !isRecordKey(parsed.rkey)) throw invalidRequest("uri must name a record: at://<did>/<collection>/<rkey>");
  const owner = parsed.hostname.startsWith("did:") ? parsed.hostname : (await services.accounts.findByHandle(parsed.hostname))?.did;
  if (!owner) throw notFound("Subject not found");
  return { did: owner, collection: canonicalNsid(parsed.collection), rkey: parsed.rkey };
}

/** updateSubjectStatus' takedown of one subject; false when there is no such subject. */
async function applyTakedown(services: Services, target: Subject, takedown: z.infer<typeof statusAttr>): Promise<boolean> {
  // The reference: an applied takedown without a reference gets the time as its reference.
  const change: TakedownChange = takedown.applied ? { ref: takedown.ref ?? new Date(services.now()).toISOString() } : null;
  switch (target.$type) {
    case "com.atproto.admin.defs#repoRef": {
      const outcome = change ? await services.accountStatus.takedown(target.did, change.ref) : await services.accountStatus.reverseTakedown(target.did);
      return outcome.found;
    }
    case "com.atproto.repo.strongRef": {
      const record = await recordOf(services, target.uri);
      return services.takedowns.changeRecordTakedown(record.did, record.collection, record.rkey, change);
    }
    case "com.atproto.admin.defs#repoBlobRef":
      return services.takedowns.changeBlobTakedown(target.did, target.cid, change);
  }
}

function adminLog(services: Services, action: string, details: Record<string, unknown>): void {
  services.log.info({ event: "admin", action, ...details }, `Admin: ${action}`);
}

/** AccountError codes the admin methods can meet, in the reference's XRPC names. */
function asXrpc(error: unknown): unknown {
  if (hasCode(error, "account_not_found")) return notFound();
  if (hasCode(error, "handle_taken")) return new XrpcError(400, "HandleNotAvailable", (error as Error).message);
  if (hasCode(error, "handle_invalid")) return new XrpcError(400, "InvalidHandle", (error as Error).message);
  if (hasCode(error, "email_taken")) return new XrpcError(400, "InvalidRequest", "This email address is already in use");
  return error;
}

async function orXrpc<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    throw asXrpc(error);
  }
}

export const adminMethods: XrpcMethods = {
  "com.atproto.admin.getAccountInfo": {
    type: "query",
    auth: "admin",
    handler: async ({ services, params }) => {
      const input = z.object({ did }).parse({ did: params.get("did") ?? undefined });
      const [account] = await services.accounts.operatorView([input.did]);
      if (!account) throw notFound();
      return accountView(account);
    },
  },

  "com.atproto.admin.getAccountInfos": {
    type: "query",
    auth: "admin",
    handler: async ({ services, params }) => {
      const input = z.object({ dids: z.array(did).min(1).max(MAX_INFOS) }).parse({ dids: params.getAll("dids") });
      return { infos: (await services.accounts.operatorView(input.dids)).map(accountView) };
    },
  },

  /**
   * Takes an account, a record or a blob down, or back (`takedown`); an account's `deactivated` too, as the person
   * would (a taken-down account's is refused: AccountTakedown). An account's takedown ends its tokens and sessions and
   * tells the network (#account takendown): accounts/account-status.ts.
   */
  "com.atproto.admin.updateSubjectStatus": {
    type: "procedure",
    auth: "admin",
    input: "json",
    handler: async ({ services }, body) => {
      const input = updateSubjectStatusInput.parse(body);
      const { takedown, deactivated } = input;
      if (takedown?.applied && deactivated && !deactivated.applied) throw invalidRequest("Cannot activate and takedown an account at the same time");
      if (takedown && !(await applyTakedown(services, input.subject, takedown))) throw notFound("Subject not found");
      if (deactivated && input.subject.$type === "com.atproto.admin.defs#repoRef") {
        const found = deactivated.applied ? await services.accountStatus.deactivate(input.subject.did) : await services.accountStatus.activate(input.subject.did);
        if (!found) throw notFound();
      }
      adminLog(services, "updateSubjectStatus", { subject: input.subject, takedown, deactivated });
      return { subject: input.subject, ...(takedown ? { takedown } : {}) };
    },
  },

  "com.atproto.admin.getSubjectStatus": {
    type: "query",
    auth: "admin",
    handler: async ({ services, params }) => {
      const input = z
        .object({ did: did.optional(), uri: z.string().max(8192).optional(), blob: cid.optional() })
        .parse({ did: params.get("did") ?? undefined, uri: params.get("uri") ?? undefined, blob: params.get("blob") ?? undefined });
      if (input.blob !== undefined) {
        if (input.did === undefined) throw invalidRequest("Must provide a did to request blob state");
        const found = await services.takedowns.blobTakedown(input.did, input.blob);
        if (!found) throw notFound("Subject not found");
        return { subject: { $type: "com.atproto.admin.defs#repoBlobRef", did: input.did, cid: input.blob }, takedown: statusAttrOf(found.ref) };
      }
      if (input.uri !== undefined) {
        const record = await recordOf(services, input.uri);
        const found = await services.takedowns.recordTakedown(record.did, record.collection, record.rkey);
        if (!found) throw notFound("Subject not found");
        const uri = `at://${record.did}/${record.collection}/${record.rkey}`;
        return { subject: { $type: "com.atproto.repo.strongRef", uri, cid: found.cid }, takedown: statusAttrOf(found.ref) };
      }
      if (input.did === undefined) throw invalidRequest("No provided subject");
      const status = await services.repo.availability(input.did);
      if (!status) throw notFound("Subject not found");
      return {
        subject: { $type: "com.atproto.admin.defs#repoRef", did: input.did },
        takedown: statusAttrOf(status.takendownAt === null ? null : (status.takedownRef ?? "")),
        deactivated: { applied: status.deactivatedAt !== null },
      };
    },
  },

  /** As `npm run account -- delete`: the DID tombstoned, then every row of the account and its #account event. */
  "com.atproto.admin.deleteAccount": {
    type: "procedure",
    auth: "admin",
    input: "json",
    handler: async ({ services }, body) => {
      const input = z.object({ did }).parse(body);
      await orXrpc(() => services.accountDeletion.deleteByOperator(input.did));
      adminLog(services, "deleteAccount", { did: input.did });
      return {};
    },
  },

  /** Any handle the person could choose: the same rules (identity.ts updateHandleOrRefuse). */
  "com.atproto.admin.updateAccountHandle": {
    type: "procedure",
    auth: "admin",
    input: "json",
    handler: async ({ services }, body) => {
      const input = z.object({ did, handle: z.string().max(253) }).parse(body);
      await orXrpc(() => updateHandleOrRefuse(services, input.did, input.handle));
      adminLog(services, "updateAccountHandle", { did: input.did, handle: input.handle });
      return {};
    },
  },

  "com.atproto.admin.updateAccountEmail": {
    type: "procedure",
    auth: "admin",
    input: "json",
    handler: async ({ services }, body) => {
      const input = z.object({ account: z.string().min(1).max(253), email: z.string().max(254) }).parse(body);
      const account = input.account.startsWith("did:") ? await services.accounts.findByDid(input.account) : await services.accounts.findByHandle(input.account);
      if (!account) throw invalidRequest(`Account does not exist: ${input.account}`);
      await orXrpc(() => services.accounts.setEmailByOperator(account.did, input.email));
      adminLog(services, "updateAccountEmail", { did: account.did });
      return {};
    },
  },

  /** pdsadmin account reset-password: the new password, and every session and app grant of the account ended. */
  "com.atproto.admin.updateAccountPassword": {
    type: "procedure",
    auth: "admin",
    input: "json",
    handler: async ({ services }, body) => {
      const input = z.object({ did, password: z.string() }).parse(body);
      await orXrpc(() => services.accounts.resetPasswordByOperator(input.did, input.password));
      adminLog(services, "updateAccountPassword", { did: input.did });
      return {};
    },
  },

  /** An email from the operator to the account's address, as plain text. */
  "com.atproto.admin.sendEmail": {
    type: "procedure",
    auth: "admin",
    input: "json",
    handler: async ({ services }, body) => {
      const input = z
        .object({ recipientDid: did, senderDid: did, content: z.string().min(1).max(100_000), subject: z.string().max(998).refine((text) => !/[\r\n]/.test(text), "subject must be one line").optional(), comment: z.string().max(10_000).optional() })
        .parse(body);
      const recipient = await services.accounts.emailOf(input.recipientDid);
      if (!recipient) throw invalidRequest("Recipient not found");
      if (!services.mailer) throw new XrpcError(501, "MethodNotImplemented", "This server sends no email: ATRIUM_SMTP_URL and ATRIUM_EMAIL_FROM are not set");
      await services.mailer.send({ to: recipient.email, subject: input.subject ?? "Message via your PDS", text: input.content });
      adminLog(services, "sendEmail", { did: input.recipientDid, senderDid: input.senderDid, comment: input.comment });
      return { sent: true };
    },
  },
};

function statusAttrOf(ref: string | null): { applied: boolean; ref?: string } {
  return ref === null ? { applied: false } : { applied: true, ref };
}
