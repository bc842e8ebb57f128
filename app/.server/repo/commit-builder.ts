import { TID } from "@atproto/common-web";
import type { Keypair } from "@atproto/crypto";
import { encode } from "@atproto/lex-cbor";
import { cidForCbor, parseCid, type Cid } from "@atproto/lex-data";
import { BlockMap, DataDiff, Repo, signCommit, type CommitData, type MST, type RepoStorage } from "@atproto/repo";
import { addBlocks } from "./block-keys.ts";

/**
 * A repository at one commit, as a commit is built on it: the commit's CID, revision and MST root (docs/decisions/0037).
 * `data` is an @atproto/repo MST, which reads its nodes lazily through the blockstore it was loaded with and keeps
 * each node it read decoded: a tree kept across commits is not read or decoded again.
 */
export type RepoAtCommit = { cid: Cid; rev: string; dataCid: Cid; data: MST };

/** One operation of a commit, with the record's block already encoded (record-data.ts) for a create or update. */
export type CommitOp =
  | { action: "create" | "update"; path: string; cid: Cid; block: Uint8Array }
  | { action: "delete"; path: string };

/** The repository at `head`, its MST read lazily through `storage` (Repo.load reads the commit block only). */
export async function loadRepoAt(storage: RepoStorage, head: string): Promise<RepoAtCommit> {
  const repo = await Repo.load(storage, parseCid(head));
  return { cid: repo.cid, rev: repo.commit.rev, dataCid: repo.commit.data, data: repo.data };
}

/**
 * The signed commit of `ops` on `base`, and the repository it makes. The same steps as @atproto/repo's
 * Repo.formatCommit (new MST, its diff against the base, the covering proofs, the signed commit block), except that
 * the records' blocks come encoded (record-data.ts encoded them once, for their CIDs) and that the new MST is
 * returned, so that the next commit can be built on it without loading it again.
 */
export async function formatCommit(did: string, base: RepoAtCommit, ops: readonly CommitOp[], keypair: Keypair): Promise<{ commit: CommitData; next: RepoAtCommit }> {
  const leaves = new BlockMap();
  let data = base.data;
  for (const op of ops) {
    if (op.action === "delete") {
      data = await data.delete(op.path);
      continue;
    }
    leaves.set(op.cid, op.block);
    data = op.action === "create" ? await data.add(op.path, op.cid) : await data.update(op.path, op.cid);
  }
  const dataCid = await data.getPointer();
  const diff = await DataDiff.of(data, base.data);
  const newBlocks = diff.newMstBlocks;
  const relevantBlocks = new BlockMap();
  for (const op of ops) addBlocks(relevantBlocks, await data.getCoveringProof(op.path));
  const addedLeaves = leaves.getMany(diff.newLeafCids.toList());
  if (addedLeaves.missing.length > 0) throw new Error(`Missing leaf blocks: ${addedLeaves.missing.join(", ")}`);
  addBlocks(newBlocks, addedLeaves.blocks);
  addBlocks(relevantBlocks, addedLeaves.blocks);

  const rev = TID.nextStr(base.rev);
  const signed = await signCommit({ did, version: 3, rev, prev: null, data: dataCid }, keypair);
  const commitBytes = encode(signed as never);
  const commitCid = await cidForCbor(commitBytes);
  const removedCids = diff.removedCids;
  if (!commitCid.equals(base.cid)) {
    newBlocks.set(commitCid, commitBytes);
    relevantBlocks.set(commitCid, commitBytes);
    removedCids.add(base.cid);
  }
  const commit: CommitData = { cid: commitCid, rev, since: base.rev, prev: base.cid, newBlocks, relevantBlocks, removedCids };
  return { commit, next: { cid: commitCid, rev, dataCid, data } };
}

/** How many repositories keep their tree, and how many commits one tree serves before it is loaded afresh. */
const KEPT_REPOSITORIES = 32;
const COMMITS_PER_TREE = 128;

/**
 * The MST each repository's last commit in this process made, kept decoded (docs/decisions/0037). A commit is built
 * on a kept tree only when it is the head the database holds (the caller compares CIDs): a CID names its content, so
 * a kept tree is that head's tree exactly, and a head moved by another process is simply not found here.
 *
 * Bounded: at most KEPT_REPOSITORIES trees (least recently used go first), and a tree serves at most
 * COMMITS_PER_TREE commits; each commit decodes the nodes on its paths and keeps them, so a tree written at many
 * places would otherwise grow towards the whole repository.
 */
export class KeptTrees {
  private readonly trees = new Map<string, { repo: RepoAtCommit; commits: number; signingKey: string }>();

  /**
   * The head this process's last commit of `did` left, with the key that signed it, unread: what the next commit
   * may be built on when the compare-and-swap is there to confirm it. The account's signing key never changes
   * while the account exists; a deleted account has no head for the swap to find.
   */
  latest(did: string): { head: { cid: string; rev: string }; signingKey: string } | undefined {
    const kept = this.trees.get(did);
    return kept && { head: { cid: kept.repo.cid.toString(), rev: kept.repo.rev }, signingKey: kept.signingKey };
  }

  /** The kept tree of `did` if it is at `head`. */
  at(did: string, head: string): RepoAtCommit | undefined {
    const kept = this.trees.get(did);
    if (!kept || kept.repo.cid.toString() !== head) return undefined;
    return kept.repo;
  }

  /** Keeps the repository a commit built on `base` made, after it landed. */
  keep(did: string, base: RepoAtCommit, next: RepoAtCommit, signingKey: string): void {
    const previous = this.trees.get(did);
    const commits = previous?.repo === base ? previous.commits + 1 : 1;
    this.trees.delete(did);
    if (commits > COMMITS_PER_TREE) return;
    this.trees.set(did, { repo: next, commits, signingKey });
    for (const oldest of this.trees.keys()) {
      if (this.trees.size <= KEPT_REPOSITORIES) break;
      this.trees.delete(oldest);
    }
  }

  /** Forgets `did`'s tree (its head moved elsewhere, or a build on it failed). */
  forget(did: string): void {
    this.trees.delete(did);
  }
}
