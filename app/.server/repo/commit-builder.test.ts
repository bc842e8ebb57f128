import { P256Keypair } from "@atproto/crypto";
import { decode } from "@atproto/lex-cbor";
import { MemoryBlockstore, Repo, verifyCommitSig, WriteOpAction, type CommitData } from "@atproto/repo";
import { describe, expect, it } from "vitest";
import { formatCommit, KeptTrees, loadRepoAt, type CommitOp, type RepoAtCommit } from "./commit-builder.ts";
import { recordData } from "./record-data.ts";

const DID = "did:plc:commitbuilder";
const POST = "app.bsky.feed.post";
const post = (i: number) => ({ $type: POST, text: `post ${i}`, createdAt: "2026-11-26T00:00:00.000Z" });
const rkey = (i: number) => `3kbuild${String(i).padStart(6, "0")}`;

async function repositoryOf(records: number) {
  const keypair = await P256Keypair.create();
  const storage = new MemoryBlockstore();
  const writes = Array.from({ length: records }, (_, i) => ({ action: WriteOpAction.Create, collection: POST, rkey: rkey(i), record: post(i) }));
  const repo = await Repo.create(storage, DID, keypair, writes as never);
  return { keypair, storage, repo };
}

async function createOp(i: number, action: "create" | "update" = "create", key = rkey(i)): Promise<CommitOp> {
  const data = await recordData(post(i));
  return { action, path: `${POST}/${key}`, cid: data.cidOf, block: data.block };
}

const cids = (blocks: CommitData["newBlocks"]) => blocks.cids().map(String).sort();

/** docs/decisions/0037: the commit builder does what Repo.formatCommit does, on a tree it may keep. */
describe("formatCommit", () => {
  it("makes the blocks, removals and MST root @atproto/repo's formatCommit makes, and a commit signed by the account", async () => {
    const { keypair, storage, repo } = await repositoryOf(300);
    const ops: CommitOp[] = [await createOp(1000), { action: "delete", path: `${POST}/${rkey(7)}` }, await createOp(1001, "update", rkey(8))];
    const ours = await formatCommit(DID, await loadRepoAt(storage, repo.cid.toString()), ops, keypair);
    const theirs = await repo.formatCommit(
      [
        { action: WriteOpAction.Create, collection: POST, rkey: rkey(1000), record: post(1000) },
        { action: WriteOpAction.Delete, collection: POST, rkey: rkey(7) },
        { action: WriteOpAction.Update, collection: POST, rkey: rkey(8), record: post(1001) },
      ] as never,
      keypair,
    );
    // The commit blocks differ by their revisions (a clock); everything under them is the same.
    const withoutCommit = (commit: CommitData) => cids(commit.newBlocks).filter((cid) => cid !== commit.cid.toString());
    expect(withoutCommit(ours.commit)).toEqual(withoutCommit(theirs));
    expect(ours.commit.removedCids.toList().map(String).sort()).toEqual(theirs.removedCids.toList().map(String).sort());
    const theirCommit = decode(theirs.newBlocks.get(theirs.cid)!) as { data: unknown };
    expect(ours.next.dataCid.toString()).toBe(String(theirCommit.data));

    await storage.applyCommit(ours.commit);
    const landed = await Repo.load(storage, ours.commit.cid);
    expect(await verifyCommitSig(landed.commit, keypair.did())).toBe(true);
    expect(landed.commit.data.toString()).toBe(ours.next.dataCid.toString());
    expect(landed.commit.rev).toBe(ours.commit.rev);
    expect((await landed.data.get(`${POST}/${rkey(1000)}`))?.toString()).toBe((await recordData(post(1000))).cid);
    expect(await landed.data.get(`${POST}/${rkey(7)}`)).toBeNull();
  });

  it("builds the next commit on the tree it returned as on the same tree loaded from storage", async () => {
    const { keypair, storage, repo } = await repositoryOf(300);
    let kept: RepoAtCommit = await loadRepoAt(storage, repo.cid.toString());
    for (let i = 0; i < 5; i++) {
      const { commit, next } = await formatCommit(DID, kept, [await createOp(2000 + i)], keypair);
      await storage.applyCommit(commit);
      const loaded = await loadRepoAt(storage, commit.cid.toString());
      expect(loaded.dataCid.toString()).toBe(next.dataCid.toString());
      expect(loaded.rev).toBe(next.rev);
      kept = next;
    }
    const fromKept = await formatCommit(DID, kept, [await createOp(3000)], keypair);
    const fromLoaded = await formatCommit(DID, await loadRepoAt(storage, kept.cid.toString()), [await createOp(3000)], keypair);
    expect(fromKept.next.dataCid.toString()).toBe(fromLoaded.next.dataCid.toString());
    expect(cids(fromKept.commit.newBlocks).length).toBe(cids(fromLoaded.commit.newBlocks).length);
  });
});

describe("KeptTrees", () => {
  const tree = (cid: string) => ({ cid: { toString: () => cid } }) as unknown as RepoAtCommit;

  it("gives a repository's tree only at the head it was kept for", () => {
    const trees = new KeptTrees();
    const base = tree("a");
    const next = tree("b");
    trees.keep(DID, base, next, "key");
    expect(trees.at(DID, "b")).toBe(next);
    expect(trees.at(DID, "a")).toBeUndefined();
    expect(trees.latest(DID)?.head.cid).toBe("b");
    trees.forget(DID);
    expect(trees.at(DID, "b")).toBeUndefined();
    expect(trees.latest(DID)).toBeUndefined();
  });

  it("lets a tree serve a bounded number of commits, then drops it so that it is loaded afresh", () => {
    const trees = new KeptTrees();
    let current = tree("0");
    let served = 0;
    for (let i = 1; i <= 200; i++) {
      const next = tree(String(i));
      trees.keep(DID, current, next, "key");
      if (trees.at(DID, String(i)) === undefined) break;
      served++;
      current = next;
    }
    expect(served).toBeGreaterThan(1);
    expect(served).toBeLessThan(200);
  });

  it("keeps a bounded number of repositories, the least recently written going first", () => {
    const trees = new KeptTrees();
    for (let i = 0; i < 100; i++) trees.keep(`did:plc:r${i}`, tree("x"), tree(`head${i}`), "key");
    expect(trees.at("did:plc:r0", "head0")).toBeUndefined();
    expect(trees.at("did:plc:r99", "head99")).toBeDefined();
  });
});
