import { isValidDid, isValidTid } from "@atproto/syntax";
import { z } from "zod";
import { canonicalNsid, isNsid, isRecordKey, isCidString } from "../../repo/identifiers.ts";
import type { ApiRequest } from "../../http/api-request.ts";
import { limitBucketOf } from "../../http/forwarded-address.ts";
import { headOf, SyncError } from "../../sync/repo-sync.ts";
import { bytesAnswer } from "../bytes-answer.ts";
import type { XrpcMethods } from "../xrpc-method.ts";
import { DEACTIVATED } from "../../accounts/account-status.ts";

/**
 * com.atproto.sync.*: the repositories for relays, app views and other PDSes (docs/decisions/0027); getBlob is with
 * the blobs' other method (blob.ts). Public, as on every PDS, and counted by the per-address /xrpc limit like every
 * other method; the exports (getRepo, getBlocks, a proof read from a snapshot) are also capped at once per address and
 * in all (docs/decisions/0042). A repository is `active` unless
 * its account is deactivated (docs/decisions/0031): then the methods that serve its data answer RepoDeactivated
 * (repo-sync.ts headOf), listRepos and getRepoStatus say `active: false, status: "deactivated"`. Accounts here are
 * never taken down or suspended, so RepoTakendown and RepoSuspended do not arise.
 */
const CAR = "application/vnd.ipld.car";

const did = z.string().refine(isValidDid, "did must be a DID");
const tid = z.string().refine(isValidTid, "must be a revision (TID)");
const cid = z.string().refine(isCidString, "must be a CID");
const limit = (max: number, fallback: number) => z.coerce.number().int().min(1).max(max).default(fallback);

const paramsOf = (params: URLSearchParams) => Object.fromEntries(params);

/** Whose exports a request's count among (docs/decisions/0042): its client's limit bucket, as every per-address limit counts. */
function exportBucketOf(request: ApiRequest): string {
  return limitBucketOf(request.clientAddress ?? "unknown");
}

/** listRepos' and getRepoStatus' `active`, and `status` ("a possible reason for why the account is not active"). */
function statusFields(active: boolean): { active: boolean; status?: typeof DEACTIVATED } {
  return active ? { active } : { active, status: DEACTIVATED };
}

export const syncMethods: XrpcMethods = {
  /** "Download a repository export as CAR file", streamed; `since`: only blocks added after that revision. */
  "com.atproto.sync.getRepo": {
    type: "query",
    auth: "none",
    handler: async ({ services, params, request }) => {
      const input = z.object({ did, since: tid.optional() }).parse(paramsOf(params));
      return bytesAnswer(CAR, await services.repoExports.repository(input.did, input.since, exportBucketOf(request)));
    },
  },

  "com.atproto.sync.getLatestCommit": {
    type: "query",
    auth: "none",
    handler: async ({ services, params }) => {
      const input = z.object({ did }).parse(paramsOf(params));
      const head = await headOf(services.repo, input.did);
      return { cid: head.cid, rev: head.rev };
    },
  },

  /** "Get data blocks needed to prove the existence or non-existence of record in the current version of repo." */
  "com.atproto.sync.getRecord": {
    type: "query",
    auth: "none",
    handler: async ({ services, params, request }) => {
      const input = z
        .object({ did, collection: z.string().refine(isNsid, "collection must be an NSID").transform(canonicalNsid), rkey: z.string().refine(isRecordKey, "rkey must be a record key") })
        .parse(paramsOf(params));
      return bytesAnswer(CAR, await services.repoExports.recordProof(input.did, input.collection, input.rkey, exportBucketOf(request)));
    },
  },

  /** The blocks named, streamed from one snapshot (docs/decisions/0042). */
  "com.atproto.sync.getBlocks": {
    type: "query",
    auth: "none",
    handler: async ({ services, params, request }) => {
      const input = z.object({ did, cids: z.array(cid).min(1).max(1000) }).parse({ did: params.get("did") ?? undefined, cids: params.getAll("cids") });
      return bytesAnswer(CAR, await services.repoExports.blocks(input.did, input.cids, exportBucketOf(request)));
    },
  },

  "com.atproto.sync.listBlobs": {
    type: "query",
    auth: "none",
    handler: async ({ services, params }) => {
      const input = z.object({ did, since: tid.optional(), limit: limit(1000, 500), cursor: cid.optional() }).parse(paramsOf(params));
      await headOf(services.repo, input.did);
      const cids = await services.repo.listBlobs(input.did, input);
      return { cids, ...(cids.length === input.limit ? { cursor: cids.at(-1) } : {}) };
    },
  },

  "com.atproto.sync.listRepos": {
    type: "query",
    auth: "none",
    handler: async ({ services, params }) => {
      const input = z.object({ limit: limit(1000, 500), cursor: did.optional() }).parse(paramsOf(params));
      const repos = await services.repo.listRepos(input);
      return {
        repos: repos.map((repo) => ({ did: repo.did, head: repo.head, rev: repo.rev, ...statusFields(repo.active) })),
        ...(repos.length === input.limit ? { cursor: repos.at(-1)!.did } : {}),
      };
    },
  },

  "com.atproto.sync.getRepoStatus": {
    type: "query",
    auth: "none",
    handler: async ({ services, params }) => {
      const input = z.object({ did }).parse(paramsOf(params));
      const availability = await services.repo.availability(input.did);
      if (!availability?.head) throw new SyncError("RepoNotFound", `Could not find repo for DID: ${input.did}`);
      // The lexicon: rev is "the current rev of the repo, if active=true" (the reference leaves it out otherwise).
      if (availability.deactivatedAt !== null) return { did: input.did, ...statusFields(false) };
      return { did: input.did, ...statusFields(true), rev: availability.head.rev };
    },
  },
};
