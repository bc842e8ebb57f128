import { z } from "zod";
import { canonicalNsid, isNsid, isRecordKey, nextTid, rawCid } from "../../repo/identifiers.ts";
import type { RecordWrite, StoredRecord, WriteConflict } from "../../repo/repo-store.ts";
import type { ResourceCaller } from "../../resource/resource-auth.ts";
import type { Services } from "../../services.ts";
import type { XrpcMethods } from "../xrpc-method.ts";
import { XrpcError } from "../xrpc-error.ts";

/** Lexicon-style input checks for com.atproto.repo.* (atproto syntax rules for NSIDs and record keys). */
const MAX_RECORD_BYTES = 100 * 1024;
const repoParam = z.string().min(1).max(2048);
/** Collections are NSIDs: stored and permission-checked in their one canonical spelling. */
const collection = z.string().refine(isNsid, "collection must be an NSID").transform(canonicalNsid);
const rkey = z.string().refine(isRecordKey, "rkey must be a valid record key");
const cid = z.string().regex(/^b[a-z2-7]{10,}$/, "must be a CID");
const recordValue = z
  .record(z.unknown())
  .refine((value) => JSON.stringify(value).length <= MAX_RECORD_BYTES, `record must be at most ${MAX_RECORD_BYTES} bytes`);

const createInput = z.object({
  repo: repoParam,
  collection,
  rkey: rkey.optional(),
  validate: z.boolean().optional(),
  record: recordValue,
  swapCommit: z.string().optional(),
});
const putInput = createInput.extend({ rkey, swapRecord: cid.nullable().optional() });
const deleteInput = z.object({ repo: repoParam, collection, rkey, swapRecord: cid.optional(), swapCommit: z.string().optional() });
const writeItem = z.discriminatedUnion("$type", [
  z.object({ $type: z.literal("com.atproto.repo.applyWrites#create"), collection, rkey: rkey.optional(), value: recordValue }),
  z.object({ $type: z.literal("com.atproto.repo.applyWrites#update"), collection, rkey, value: recordValue }),
  z.object({ $type: z.literal("com.atproto.repo.applyWrites#delete"), collection, rkey }),
]);
const applyWritesInput = z.object({
  repo: repoParam,
  validate: z.boolean().optional(),
  writes: z.array(writeItem).min(1).max(200),
  swapCommit: z.string().optional(),
});
const getRecordParams = z.object({ repo: repoParam, collection, rkey, cid: cid.optional() });
const listRecordsParams = z.object({
  repo: repoParam,
  collection,
  limit: z.coerce.number().int().min(1).max(100).default(50),
  cursor: z.string().max(512).optional(),
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

async function applyOrThrow(services: Services, did: string, writes: RecordWrite[]): Promise<void> {
  const conflict = await services.repo.applyWrites(did, writes, services.now());
  if (conflict) throw conflictError(conflict);
}

function conflictError(conflict: WriteConflict): XrpcError {
  const at = `${conflict.collection}/${conflict.rkey}`;
  switch (conflict.kind) {
    case "exists":
      return new XrpcError(400, "RecordAlreadyExists", `A record already exists at ${at}`);
    case "missing":
      return new XrpcError(400, "InvalidRequest", `Could not find a record to update at ${at}; create it instead`);
    case "swap-mismatch":
      return new XrpcError(400, "InvalidSwap", `The record at ${at} is not the version given in swapRecord`);
  }
}

async function resolveRepo(services: Services, repo: string): Promise<string | undefined> {
  if (repo.startsWith("did:")) return repo;
  return (await services.accounts.findByHandle(repo))?.did;
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
      const write: RecordWrite = { action: "create", collection: input.collection, rkey: key, value, cid: rawCid(JSON.stringify(value)) };
      await applyOrThrow(services, caller.did, [write]);
      return { uri: recordUri(caller.did, input.collection, key), cid: write.cid, validationStatus: "unknown" };
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
      const write: RecordWrite = {
        action: "put",
        collection: input.collection,
        rkey: input.rkey,
        value,
        cid: rawCid(JSON.stringify(value)),
        swapCid: input.swapRecord,
      };
      await applyOrThrow(services, caller.did, [write]);
      return { uri: recordUri(caller.did, input.collection, input.rkey), cid: write.cid, validationStatus: "unknown" };
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
      await applyOrThrow(services, caller.did, [{ action: "delete", collection: input.collection, rkey: input.rkey, swapCid: input.swapRecord }]);
      return {};
    },
  },

  /** Every write is checked against its own collection and action before any is applied; then all or none. */
  "com.atproto.repo.applyWrites": {
    type: "procedure",
    auth: "required",
    input: "json",
    handler: async ({ services, caller }, body) => {
      const input = applyWritesInput.parse(body);
      assertOwnRepo(caller, input.repo);
      const writes: RecordWrite[] = input.writes.map((item) => {
        if (item.$type === "com.atproto.repo.applyWrites#delete") {
          caller.requireRepo(item.collection, "delete");
          return { action: "delete", collection: item.collection, rkey: item.rkey };
        }
        const isCreate = item.$type === "com.atproto.repo.applyWrites#create";
        caller.requireRepo(item.collection, isCreate ? "create" : "update");
        const value = normalizeRecord(item.collection, item.value);
        const key = item.rkey ?? nextTid(services.now());
        return { action: isCreate ? "create" : "update", collection: item.collection, rkey: key, value, cid: rawCid(JSON.stringify(value)) };
      });
      await applyOrThrow(services, caller.did, writes);
      return {
        results: writes.map((write) =>
          write.action === "delete"
            ? { $type: "com.atproto.repo.applyWrites#deleteResult" }
            : {
                $type: `com.atproto.repo.applyWrites#${write.action}Result`,
                uri: recordUri(caller.did, write.collection, write.rkey),
                cid: write.cid,
                validationStatus: "unknown",
              },
        ),
      };
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
