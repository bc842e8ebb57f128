import { parseCid } from "@atproto/lex-data";
import { def, MemoryBlockstore, MST, readCar, verifyCommitSig } from "@atproto/repo";
import type { CID } from "multiformats/cid";
import { expect } from "vitest";
import type { Frame } from "./subscribe-repos-lexicon.ts";

/**
 * The checks a relay makes on a repository's #commit events, done with the reference implementation
 * (@atproto/repo), never with Atrium's code: each commit signed by the account's did:key, its ops proven by the
 * blocks it carries, and sync v1.1's inductive check (the ops, undone on the new tree with only the event's blocks,
 * give back prevData; each commit's since is the previous rev).
 */

export type CommitOp = { action: "create" | "update" | "delete"; path: string; cid: CID | null; prev?: CID };
export type CommitBody = { seq: number; repo: string; commit: CID; rev: string; since: string | null; blocks: Uint8Array; ops: CommitOp[]; prevData?: CID };

/** The #commit bodies among the frames, of one repository when `did` is given, in the order received. */
export function commitsOf(frames: Frame[], did?: string): CommitBody[] {
  return frames.flatMap((frame) =>
    frame.kind === "message" && frame.type === "#commit" && (did === undefined || frame.body.repo === did) ? [frame.body as unknown as CommitBody] : [],
  );
}

/** The commit block verified against the did:key, and the tree the event's blocks hold. */
async function openCommit(event: CommitBody, did: string, didKey: string) {
  const { blocks } = await readCar(event.blocks);
  const storage = new MemoryBlockstore(blocks);
  const commit = await storage.readObj(parseCid(event.commit.toString()), def.commit);
  expect(commit.did).toBe(did);
  expect(commit.rev).toBe(event.rev);
  expect(await verifyCommitSig(commit, didKey)).toBe(true);
  return { commit, tree: await MST.load(storage, commit.data) };
}

/**
 * Verifies a repository's #commit events, in sequence order, as one chain: the first needs no predecessor only if
 * `fromStart` (its since is then null). Returns the last commit's rev and data root.
 */
export async function verifyCommitChain(commits: CommitBody[], did: string, didKey: string, options: { fromStart: boolean }): Promise<{ rev: string; data: string } | undefined> {
  expect(commits.map((event) => event.seq)).toEqual([...commits.map((event) => event.seq)].sort((a, b) => a - b));
  if (options.fromStart && commits.length > 0) expect(commits[0]!.since).toBeNull();
  let previous: { rev: string; data: string } | undefined;
  for (const event of commits) {
    const { commit, tree } = await openCommit(event, did, didKey);
    for (const op of event.ops) {
      // The blocks prove each op: a create or update leads to its record's CID, a delete to nothing.
      expect((await tree.get(op.path))?.toString() ?? null).toBe(op.cid?.toString() ?? null);
    }
    if (previous) {
      expect(event.since).toBe(previous.rev);
      expect(event.prevData?.toString()).toBe(previous.data);
      let undone = tree;
      for (const op of event.ops) {
        if (op.action === "create") undone = await undone.delete(op.path);
        else if (op.action === "update") undone = await undone.update(op.path, parseCid(op.prev!.toString()));
        else undone = await undone.add(op.path, parseCid(op.prev!.toString()));
      }
      expect((await undone.getPointer()).toString()).toBe(previous.data);
    }
    previous = { rev: commit.rev, data: commit.data.toString() };
  }
  return previous;
}
