import type { FirehoseConsumer } from "./firehose-consumer.ts";
import type { Frame } from "./subscribe-repos-lexicon.ts";
import type { TestServer } from "./test-server.ts";
import { callAnonymous } from "./xrpc.ts";

/**
 * What the network sees of one account's repository while it is deactivated or taken down (docs/decisions/0031,
 * 0051): the sync methods that serve its data, getRepoStatus, listRepos, and its own firehose messages.
 */

/** A repository with a record `kept` in `collection` (its CID) and a blob its records hold. */
export type ServedRepository = { did: string; collection: string; recordCid: string; blobCid: string };

/** Each com.atproto.sync method that serves a repository's data, with its parameters for `repo`. */
export function syncReads(repo: () => ServedRepository): Array<[string, () => Record<string, string>]> {
  return [
    ["com.atproto.sync.getRepo", () => ({ did: repo().did })],
    ["com.atproto.sync.getLatestCommit", () => ({ did: repo().did })],
    ["com.atproto.sync.getRecord", () => ({ did: repo().did, collection: repo().collection, rkey: "kept" })],
    ["com.atproto.sync.getBlocks", () => ({ did: repo().did, cids: repo().recordCid })],
    ["com.atproto.sync.getBlob", () => ({ did: repo().did, cid: repo().blobCid })],
    ["com.atproto.sync.listBlobs", () => ({ did: repo().did })],
  ];
}

/** getRepoStatus's answer for `did`. */
export async function repoStatusOf(server: TestServer, did: string): Promise<Record<string, unknown>> {
  return (await callAnonymous<Record<string, unknown>>(server, "com.atproto.sync.getRepoStatus", { params: { did } })).body;
}

/** listRepos' entry for `did`. */
export async function listedRepo(server: TestServer, did: string): Promise<Record<string, unknown> | undefined> {
  const answer = await callAnonymous<{ repos: Array<Record<string, unknown>> }>(server, "com.atproto.sync.listRepos");
  return answer.body.repos.find((repo) => repo.did === did);
}

export type FirehoseMessage = Extract<Frame, { kind: "message" }>;

/** The firehose's messages about `did` so far. */
export function messagesOf(firehose: FirehoseConsumer, did: string): FirehoseMessage[] {
  return firehose.frames.filter((frame): frame is FirehoseMessage => frame.kind === "message" && (frame.body.did ?? frame.body.repo) === did);
}
