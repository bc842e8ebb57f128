import { Secp256k1Keypair } from "@atproto/crypto";
import { encode } from "@atproto/lex-cbor";
import { cidForCbor, parseCid, type Cid } from "@atproto/lex-data";
import { MemoryBlockstore, mstUtil, Repo, WriteOpAction, type RecordWriteOp } from "@atproto/repo";
import { describe, expect, it } from "vitest";
import { keyLayer, MstError, NODES_PER_READ, walkMst, type BlockReader, type MstLeaf } from "./mst-walk.ts";

const DID = "did:plc:walkwalkwalkwalkwalkwalk";
const NOTE = "com.example.note";

/** A repository of `count` records made by @atproto/repo: its blocks and its tree's root. */
async function repository(count: number) {
  const storage = new MemoryBlockstore();
  const creates: RecordWriteOp[] = Array.from({ length: count }, (_, index) => ({
    action: WriteOpAction.Create,
    collection: NOTE as never,
    rkey: `3k${String(index).padStart(11, "0")}`,
    record: { $type: NOTE, text: `note ${index}` },
  }));
  const repo = await Repo.create(storage, DID, await Secp256k1Keypair.create(), creates as never);
  return { storage, root: repo.commit.data.toString(), leaves: (await repo.data.list()).map((leaf) => ({ key: leaf.key, cid: leaf.value.toString() })) };
}

/** A reader over a map of blocks, recording how many CIDs each read asks for. */
function readerOf(blocks: Map<string, Uint8Array>, asked: number[] = []): BlockReader {
  return async (cids) => {
    asked.push(cids.length);
    return new Map(cids.filter((cid) => blocks.has(cid)).map((cid) => [cid, blocks.get(cid)!]));
  };
}

async function walked(root: string, read: BlockReader, maxNodes = 1_000_000) {
  const nodes: string[] = [];
  const leaves: MstLeaf[] = [];
  for await (const batch of walkMst(root, read, { maxNodes })) {
    nodes.push(...batch.nodes);
    leaves.push(...batch.leaves);
  }
  return { nodes, leaves };
}

async function refusal(root: string, read: BlockReader, maxNodes?: number): Promise<string> {
  try {
    await walked(root, read, maxNodes);
  } catch (error) {
    if (error instanceof MstError) return error.message;
    throw error;
  }
  throw new Error("the walk was not refused");
}

/** Keys at a given layer, found by trying record keys in order. */
function keysAtLayer(layer: number, count: number, after = 0): string[] {
  const keys: string[] = [];
  for (let index = after; keys.length < count; index++) {
    const key = `${NOTE}/k${String(index).padStart(6, "0")}`;
    if (keyLayer(key) === layer) keys.push(key);
  }
  return keys;
}

type Entry = { key: string; tree?: Cid };

/** An MST node written by hand (atproto repository spec: l, e[p, k, v, t]), with prefix compression. */
class HandMadeTree {
  readonly blocks = new Map<string, Uint8Array>();
  leafCid!: Cid;

  async init() {
    const bytes = encode({ $type: NOTE, text: "leaf" });
    this.leafCid = await cidForCbor(bytes);
    this.blocks.set(this.leafCid.toString(), bytes);
    return this;
  }

  async node(entries: Entry[], left: Cid | null = null, options: { prefix?: (index: number, shared: number) => number } = {}): Promise<Cid> {
    let previous = "";
    const e = entries.map((entry, index) => {
      let shared = 0;
      while (shared < previous.length && previous[shared] === entry.key[shared]) shared++;
      const p = options.prefix ? options.prefix(index, shared) : shared;
      previous = entry.key;
      return { p, k: Buffer.from(entry.key.slice(p), "latin1"), v: this.leafCid, t: entry.tree ?? null };
    });
    const bytes = encode({ l: left, e } as never);
    const cid = await cidForCbor(bytes);
    this.blocks.set(cid.toString(), bytes);
    return cid;
  }
}

describe("walkMst (docs/decisions/0055)", () => {
  it("counts a key's layer as @atproto/repo does (two leading zero bits of SHA-256 a layer)", async () => {
    const keys = Array.from({ length: 2000 }, (_, index) => `app.bsky.feed.post/3l${index.toString(36).padStart(11, "a")}`);
    const layers = await Promise.all(keys.map((key) => mstUtil.leadingZerosOnHash(key)));
    expect(keys.map(keyLayer)).toEqual(layers);
    // The sample reaches several layers, so that each branch of the count is exercised.
    expect(new Set(layers).size).toBeGreaterThanOrEqual(4);
  });

  it("finds every leaf of a tree @atproto/repo built, reading at most a batch of nodes at a time", async () => {
    const { storage, root, leaves } = await repository(3000);
    const asked: number[] = [];
    const result = await walked(root, readerOf(new Map(storage.blocks.entries().map((entry) => [entry.cid.toString(), entry.bytes])), asked));
    expect([...result.leaves].sort((a, b) => (a.key < b.key ? -1 : 1))).toEqual(leaves);
    expect(new Set(result.nodes).size).toBe(result.nodes.length);
    expect(Math.max(...asked)).toBeLessThanOrEqual(NODES_PER_READ);
    // Batched: far fewer reads than nodes.
    expect(asked.length).toBeLessThan(result.nodes.length / 4);
  });

  it("walks the empty tree of a new repository", async () => {
    const tree = await new HandMadeTree().init();
    const root = await tree.node([]);
    expect(await walked(root.toString(), readerOf(tree.blocks))).toEqual({ nodes: [root.toString()], leaves: [] });
  });

  it("refuses a node whose keys are out of order, or repeated", async () => {
    const tree = await new HandMadeTree().init();
    const [a, b] = keysAtLayer(0, 2);
    expect(await refusal((await tree.node([{ key: b! }, { key: a! }])).toString(), readerOf(tree.blocks))).toMatch(/out of order/);
    expect(await refusal((await tree.node([{ key: a! }, { key: a! }])).toString(), readerOf(tree.blocks))).toMatch(/out of order/);
  });

  it("refuses a subtree holding keys outside the range its parent gives it", async () => {
    const tree = await new HandMadeTree().init();
    const [top] = keysAtLayer(1, 1, 100);
    const below = keysAtLayer(0, 50).filter((key) => key < top!);
    // The subtree right of `top` may hold only keys after it.
    const wrongSide = await tree.node([{ key: top!, tree: await tree.node([{ key: below[0]! }]) }]);
    expect(await refusal(wrongSide.toString(), readerOf(tree.blocks))).toMatch(/out of order/);
    // Left of it, the same subtree is in its place.
    const rightSide = await tree.node([{ key: top! }], await tree.node([{ key: below[0]! }]));
    expect((await walked(rightSide.toString(), readerOf(tree.blocks))).leaves.map((leaf) => leaf.key)).toEqual([top, below[0]]);
    // The same key in the root and again under it: keys are unique across the tree.
    const repeated = await tree.node([{ key: top!, tree: await tree.node([{ key: top! }]) }]);
    expect(await refusal(repeated.toString(), readerOf(tree.blocks))).toMatch(/out of order/);
  });

  it("refuses keys of mixed layers in a node, and a child not below its parent's layer", async () => {
    const tree = await new HandMadeTree().init();
    const mixed = [...keysAtLayer(0, 1), ...keysAtLayer(1, 1)].sort();
    expect(await refusal((await tree.node(mixed.map((key) => ({ key })))).toString(), readerOf(tree.blocks))).toMatch(/one layer/);
    const [parent] = keysAtLayer(0, 1);
    const [sameLayer] = keysAtLayer(0, 1, 500);
    const [first, second] = [parent!, sameLayer!].sort();
    const child = await tree.node([{ key: second! }]);
    expect(await refusal((await tree.node([{ key: first!, tree: child }])).toString(), readerOf(tree.blocks))).toMatch(/below its parent's layer/);
  });

  it("refuses a missing node, a block that is not a node, an invalid key and a prefix longer than the previous key", async () => {
    const tree = await new HandMadeTree().init();
    const [key] = keysAtLayer(1, 1);
    const missing = await cidForCbor(encode({ l: null, e: [] } as never));
    const withMissing = await tree.node([{ key: key!, tree: missing }]);
    tree.blocks.delete(missing.toString());
    expect(await refusal(withMissing.toString(), readerOf(tree.blocks))).toMatch(/does not hold the MST node/);
    expect(await refusal(tree.leafCid.toString(), readerOf(tree.blocks))).toMatch(/is not an MST node/);
    expect(await refusal((await tree.node([{ key: "no-slash-here" }])).toString(), readerOf(tree.blocks))).toMatch(/not a valid repository path/);
    const [a, b] = keysAtLayer(0, 2);
    const overlong = await tree.node([{ key: a! }, { key: b! }], null, { prefix: (index) => (index === 0 ? 3 : 0) });
    expect(await refusal(overlong.toString(), readerOf(tree.blocks))).toMatch(/shares more of the previous key/);
  });

  it("refuses a tree that reaches a node more often than the CAR has blocks", async () => {
    const tree = await new HandMadeTree().init();
    // Keyless nodes may be shared without breaking any range: the bound on nodes read still stops the walk.
    const empty = await tree.node([]);
    let chain = empty;
    for (let level = 0; level < 6; level++) chain = await tree.node([], chain);
    const [a, b, c] = keysAtLayer(2, 3);
    const wide = await tree.node([{ key: a!, tree: chain }, { key: b!, tree: chain }, { key: c!, tree: chain }], chain);
    expect(await refusal(wide.toString(), readerOf(tree.blocks), tree.blocks.size)).toMatch(/reached more than once/);
  });

  it("hands out record CIDs as the leaves name them", async () => {
    const tree = await new HandMadeTree().init();
    const [key] = keysAtLayer(0, 1);
    const root = await tree.node([{ key: key! }]);
    const { leaves } = await walked(root.toString(), readerOf(tree.blocks));
    expect(leaves).toEqual([{ key, cid: tree.leafCid.toString() }]);
    expect(parseCid(leaves[0]!.cid).code).toBe(0x71);
  });
});
