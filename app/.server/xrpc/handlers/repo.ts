import { isAtIdentifierString } from "@atproto/syntax";
import { z } from "zod";
import { canonicalNsid, isNsid, isRecordKey, nextTid, isCidString } from "../../repo/identifiers.ts";
import type { StoredRecord } from "../../repo/repo-store.ts";
import { MAX_COMMIT_OPS, type Committed, type WriteOptions, type WriteRequest, type WriteResult } from "../../repo/repo-writer.ts";
import type { ResourceCaller } from "../../resource/resource-auth.ts";
import type { Services } from "../../services.ts";
import type { XrpcMethods } from "../xrpc-method.ts";
import { XrpcError } from "../xrpc-error.ts";

/** Lexicon-style input checks for com.atproto.repo.* (atproto syntax rules for NSIDs and record keys). */
const MAX_RECORD_BYTES = 100 * 1024;
/** The lexicon's at-identifier: a DID or a handle, by their syntax, before anything looks it up. */
const repoParam = z.string().refine(isAtIdentifierString, "repo must be a DID or a handle");
/** Collections are NSIDs: stored and permission-checked in their one canonical spelling. */
const collection = z.string().refine(isNsid, "collection must be an NSID").transform(canonicalNsid);
const rkey = z.string().refine(isRecordKey, "rkey must be a valid record key");
const cid = z.string().refine(isCidString, "must be a CID");
const recordValue = z
  .record(z.unknown())
  .refine((value) => JSON.stringify(value).length <= MAX_RECORD_BYTES, `record must be at most ${MAX_RECORD_BYTES} bytes`);

const createInput = z.object({
  repo: repoParam,
  collection,
  rkey: rkey.optional(),
  validate: z.boolean().optional(),
  record: recordValue,
  swapCommit: cid.optional(),
});
const putInput = createInput.extend({ rkey, swapRecord: cid.nullable().optional() });
const deleteInput = z.object({ repo: repoParam, collection, rkey, swapRecord: cid.optional(), swapCommit: cid.optional() });
const writeItem = z.discriminatedUnion("$type", [
  z.object({ $type: z.literal("com.atproto.repo.applyWrites#create"), collection, rkey: rkey.optional(), value: recordValue }),
  z.object({ $type: z.literal("com.atproto.repo.applyWrites#update"), collection, rkey, value: recordValue }),
  z.object({ $type: z.literal("com.atproto.repo.applyWrites#delete"), collection, rkey }),
]);
const applyWritesInput = z.object({
  repo: repoParam,
  validate: z.boolean().optional(),
  writes: z.array(writeItem).min(1).max(MAX_COMMIT_OPS, `a commit holds at most ${MAX_COMMIT_OPS} writes`),
  swapCommit: cid.optional(),
});
const getRecordParams = z.object({ repo: repoParam, collection, rkey, cid: cid.optional() });
const listRecordsParams = z.object({
  repo: repoParam,
  collection,
  limit: z.coerce.number().int().min(1).max(100).default(50),
  /** The cursor this method hands out is the last record key of a page. */
  cursor: rkey.optional(),
  reverse: z.enum(["true", "false"]).default("false").transform((value) => value === "true"),
});

const recordUri = (did: string, coll: string, key: string) => `at://${did}/${coll}/${key}`;

/** Writes go only to the caller's own repository, named by DID or handle. */
function assertOwnRepo(caller: ResourceCaller, repo: string): void {
  if (repo !== caller.did && repo.toLowerCase() !== caller.handle) {
    throw new XrpcError(403, "Forbidden", "This token can only write to its own account's repository");
  }
}

/** A record's $type, when present, must name its collection (in any spelling of it); it is stored as the collection. */
function normalizeRecord(coll: string, value: Record<string, unknown>): Record<string, unknown> {
  if (value.$type === undefined || value.$type === coll) return { ...value, $type: coll };
  if (typeof value.$type !== "string" || canonicalNsid(value.$type) !== coll) throw new XrpcError(400, "InvalidRecord", `record $type must be ${coll}`);
  return { ...value, $type: coll };
}

/**
 * One commit holding exactly this call's writes (docs/decisions/0027), each new record checked as `validate` says
 * (docs/decisions/0049), once the account's write budget has room for every one of them (docs/decisions/0045: 429
 * RateLimitExceeded otherwise, and nothing written).
 */
async function commitWrites(services: Services, did: string, writes: WriteRequest[], options: WriteOptions): Promise<Committed> {
  await services.writeBudget.spend(did, writes);
  return services.repoWriter.write(did, writes, options);
}

/** com.atproto.repo.defs#commitMeta: the commit a write made. */
function commitMeta(committed: Committed) {
  return committed.commit ? { commit: { cid: committed.commit.cid, rev: committed.commit.rev } } : {};
}

function writeResult(did: string, result: WriteResult) {
  if (result.action === "delete") return { $type: "com.atproto.repo.applyWrites#deleteResult" };
  return { $type: `com.atproto.repo.applyWrites#${result.action}Result`, uri: recordUri(did, result.collection, result.rkey), cid: result.cid, validationStatus: result.validationStatus };
}

/**
 * The DID whose records getRecord and listRecords read: undefined for an unknown handle, and for a deactivated
 * account, whose records the reference PDS does not serve either (its getDidForActor leaves deactivated accounts
 * out: docs/decisions/0031).
 */
async function resolveRepo(services: Services, repo: string): Promise<string | undefined> {
  const did = repo.startsWith("did:") ? repo : (await services.accounts.findByHandle(repo))?.did;
  if (did === undefined) return undefined;
  const availability = await services.repo.availability(did);
  return availability !== undefined && availability.deactivatedAt !== null ? undefined : did;
}

function recordView(did: string, record: StoredRecord) {
  return { uri: recordUri(did, record.collection, record.rkey), cid: record.cid, value: record.value };
}

export const repoMethods: XrpcMethods = {
  "com.atproto.repo.createRecord": {
    type: "procedure",
    auth: "required",
    input: "json",
    handler: async ({ services, caller }, body) => {
      const input = createInput.parse(body);
      assertOwnRepo(caller, input.repo);
      caller.requireRepo(input.collection, "create");
      const value = normalizeRecord(input.collection, input.record);
      const key = input.rkey ?? nextTid(services.now());
      const committed = await commitWrites(services, caller.did, [{ action: "create", collection: input.collection, rkey: key, value }], { swapCommit: input.swapCommit, validate: input.validate });
      return { uri: recordUri(caller.did, input.collection, key), cid: committed.results[0]!.cid, ...commitMeta(committed), validationStatus: committed.results[0]!.validationStatus };
    },
  },

  /** putRecord may create or replace: it needs both create and update (reference PDS). */
  "com.atproto.repo.putRecord": {
    type: "procedure",
    auth: "required",
    input: "json",
    handler: async ({ services, caller }, body) => {
      const input = putInput.parse(body);
      assertOwnRepo(caller, input.repo);
      caller.requireRepo(input.collection, "create");
      caller.requireRepo(input.collection, "update");
      const value = normalizeRecord(input.collection, input.record);
      const write: WriteRequest = { action: "put", collection: input.collection, rkey: input.rkey, value, swapRecord: input.swapRecord };
      const committed = await commitWrites(services, caller.did, [write], { swapCommit: input.swapCommit, validate: input.validate });
      return { uri: recordUri(caller.did, input.collection, input.rkey), cid: committed.results[0]!.cid, ...commitMeta(committed), validationStatus: committed.results[0]!.validationStatus };
    },
  },

  "com.atproto.repo.deleteRecord": {
    type: "procedure",
    auth: "required",
    input: "json",
    handler: async ({ services, caller }, body) => {
      const input = deleteInput.parse(body);
      assertOwnRepo(caller, input.repo);
      caller.requireRepo(input.collection, "delete");
      const write: WriteRequest = { action: "delete", collection: input.collection, rkey: input.rkey, swapRecord: input.swapRecord };
      return commitMeta(await commitWrites(services, caller.did, [write], { swapCommit: input.swapCommit }));
    },
  },

  /** Every write is checked against its own collection and action before any is applied; then all or none, in one commit. */
  "com.atproto.repo.applyWrites": {
    type: "procedure",
    auth: "required",
    input: "json",
    handler: async ({ services, caller }, body) => {
      const input = applyWritesInput.parse(body);
      assertOwnRepo(caller, input.repo);
      const writes: WriteRequest[] = input.writes.map((item) => {
        if (item.$type === "com.atproto.repo.applyWrites#delete") {
          caller.requireRepo(item.collection, "delete");
          return { action: "delete", collection: item.collection, rkey: item.rkey };
        }
        const isCreate = item.$type === "com.atproto.repo.applyWrites#create";
        caller.requireRepo(item.collection, isCreate ? "create" : "update");
        const value = normalizeRecord(item.collection, item.value);
        return { action: isCreate ? "create" : "update", collection: item.collection, rkey: item.rkey ?? nextTid(services.now()), value };
      });
      const committed = await commitWrites(services, caller.did, writes, { swapCommit: input.swapCommit, validate: input.validate });
      return { ...commitMeta(committed), results: committed.results.map((result) => writeResult(caller.did, result)) };
    },
  },

  /** Reads are public, as on any PDS. */
  "com.atproto.repo.getRecord": {
    type: "query",
    auth: "none",
    handler: async ({ services, params }) => {
      const input = getRecordParams.parse(Object.fromEntries(params));
      const did = await resolveRepo(services, input.repo);
      const record = did ? await services.repo.getRecord(did, input.collection, input.rkey) : undefined;
      if (!did || !record || (input.cid && input.cid !== record.cid)) {
        throw new XrpcError(400, "RecordNotFound", `Could not locate record: ${recordUri(input.repo, input.collection, input.rkey)}`);
      }
      return recordView(did, record);
    },
  },

  "com.atproto.repo.listRecords": {
    type: "query",
    auth: "none",
    handler: async ({ services, params }) => {
      const input = listRecordsParams.parse(Object.fromEntries(params));
      const did = await resolveRepo(services, input.repo);
      if (!did) throw new XrpcError(400, "InvalidRequest", `Could not find repo: ${input.repo}`);
      const records = await services.repo.listRecords(did, input.collection, { limit: input.limit, cursor: input.cursor, reverse: input.reverse });
      const last = records.at(-1);
      return { records: records.map((record) => recordView(did, record)), ...(records.length === input.limit && last ? { cursor: last.rkey } : {}) };
    },
  },
};
