import { createHash } from "node:crypto";
import { parseCid } from "@atproto/lex-data";
import { mstUtil, nodeDataDef, parseObjByDef } from "@atproto/repo";

/**
 * A walk of a repository's Merkle Search Tree whose nodes are read in batches from wherever they are kept (the
 * staged blocks of an import: repo/repo-import.ts, docs/decisions/0055), so that neither the tree nor its leaves are
 * ever held whole: the walk holds the nodes it has yet to visit (a few per level), and hands out the nodes and leaves
 * it found one batch at a time.
 *
 * It checks what makes the blocks an MST (atproto repository spec, "Merkle Search Tree"), each node on its own: the
 * node decodes as @atproto/repo's node schema, its keys are valid MST keys, strictly increasing and inside the range
 * its parent gave it (so that the keys of the whole tree are sorted and unique, whatever order the nodes are read in),
 * and all of them sit at the node's layer (the leading zero bits of the key's SHA-256, two per layer), below the
 * parent's. A node reached twice is refused: in an MST every node has one place, and a block reached from many
 * places would make the walk's work grow with the paths to it rather than with the blocks.
 */

export class MstError extends Error {}

export type MstLeaf = { key: string; cid: string };

/** What one step of the walk found: the nodes it read (their CIDs) and the leaves they hold (key, record CID). */
export type MstBatch = { nodes: string[]; leaves: MstLeaf[] };

/** Reads the blocks among `cids` that exist, by CID. */
export type BlockReader = (cids: readonly string[]) => Promise<Map<string, Uint8Array>>;

/** A subtree still to visit: its root, the keys it may hold (strictly between lo and hi), the layer it must stay below. */
type Pending = { cid: string; lo: string | undefined; hi: string | undefined; below: number | undefined };

/** Nodes read per batch: one statement's worth, and few enough that the pending subtrees stay a few per level. */
export const NODES_PER_READ = 128;

/**
 * The walk from `root`, batch by batch. `maxNodes` bounds the nodes it reads (an import's: the blocks its CAR held);
 * a tree needing more is refused.
 */
export async function* walkMst(root: string, read: BlockReader, options: { maxNodes: number }): AsyncGenerator<MstBatch> {
  const pending: Pending[] = [{ cid: root, lo: undefined, hi: undefined, below: undefined }];
  let visited = 0;
  while (pending.length > 0) {
    // The top of the stack: the walk stays depth-first, so the stack holds a few subtrees per level.
    const batch = pending.splice(Math.max(0, pending.length - NODES_PER_READ));
    visited += batch.length;
    if (visited > options.maxNodes) throw new MstError(`The MST has more nodes than the CAR has blocks (${options.maxNodes}): a node is reached more than once`);
    const blocks = await read(batch.map((subtree) => subtree.cid));
    const found: MstBatch = { nodes: [], leaves: [] };
    for (const subtree of batch) {
      const bytes = blocks.get(subtree.cid);
      if (!bytes) throw new MstError(`The CAR does not hold the MST node ${subtree.cid}`);
      found.nodes.push(subtree.cid);
      pending.push(...visitNode(subtree, bytes, found.leaves));
    }
    yield found;
  }
}

/** Checks one node, adds its leaves to `leaves`, and answers its subtrees. */
function visitNode(subtree: Pending, bytes: Uint8Array, leaves: MstLeaf[]): Pending[] {
  const data = decodeNode(subtree.cid, bytes);
  const children: Pending[] = [];
  const keys: string[] = [];
  let previous = "";
  for (const entry of data.e) {
    if (entry.p > previous.length) throw new MstError(`MST node ${subtree.cid}: an entry shares more of the previous key than it has`);
    const key = previous.slice(0, entry.p) + Buffer.from(entry.k).toString("latin1");
    if (!mstUtil.isValidMstKey(key)) throw new MstError(`MST node ${subtree.cid}: ${JSON.stringify(key.slice(0, 100))} is not a valid repository path`);
    const lower = keys.at(-1) ?? subtree.lo;
    if ((lower !== undefined && key <= lower) || (subtree.hi !== undefined && key >= subtree.hi)) {
      throw new MstError(`MST node ${subtree.cid}: the key ${key} is out of order`);
    }
    keys.push(key);
    leaves.push({ key, cid: entry.v.toString() });
    previous = key;
  }
  const layer = nodeLayer(subtree, keys);
  const below = layer ?? subtree.below;
  const bounds = [subtree.lo, ...keys, subtree.hi];
  if (data.l !== null) children.push({ cid: data.l.toString(), lo: bounds[0], hi: bounds[1], below });
  data.e.forEach((entry, index) => {
    if (entry.t !== null) children.push({ cid: entry.t.toString(), lo: bounds[index + 1], hi: bounds[index + 2], below });
  });
  return children;
}

function decodeNode(cid: string, bytes: Uint8Array) {
  try {
    return parseObjByDef(bytes, parseCid(cid), nodeDataDef).obj;
  } catch (error) {
    throw new MstError(`The block ${cid} is not an MST node: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The layer every key of the node sits at (none for a node without keys), below its parent's. */
function nodeLayer(subtree: Pending, keys: readonly string[]): number | undefined {
  if (keys.length === 0) return undefined;
  const layer = keyLayer(keys[0]!);
  for (const key of keys) {
    if (keyLayer(key) !== layer) throw new MstError(`MST node ${subtree.cid}: its keys are not all at one layer`);
  }
  if (subtree.below !== undefined && layer >= subtree.below) throw new MstError(`MST node ${subtree.cid}: its keys are not below its parent's layer`);
  return layer;
}

/**
 * A key's layer in the MST: atproto repository spec, "the number of leading binary zeros in the SHA-256 hash of the
 * key, divided by two, rounded down" (@atproto/repo's mstUtil.leadingZerosOnHash, which hashes with an asynchronous
 * SHA-256 of its own; this one uses Node's, as the walk counts every key).
 */
export function keyLayer(key: string): number {
  const hash = createHash("sha256").update(key, "latin1").digest();
  let zeros = 0;
  for (const byte of hash) {
    if (byte === 0) {
      zeros += 4;
      continue;
    }
    if (byte < 4) zeros += 3;
    else if (byte < 16) zeros += 2;
    else if (byte < 64) zeros += 1;
    break;
  }
  return zeros;
}
