import type { BlockMap, CidSet } from "@atproto/repo";

/**
 * @atproto/repo's BlockMap and CidSet keep their CIDs as strings, and parse each one back into a CID object when they
 * are iterated (a base32 decoding, about 2.5 µs a CID: 10–20 of them a commit, more than the commit's rows cost to
 * bind). Where only the strings are needed — the store's rows, one map merged into another — these read the strings
 * as the library keeps them, and fall back to its public iteration if a version ever keeps them otherwise. The
 * version is pinned exactly (package.json); block-keys.test.ts fails when an upgrade takes the fast path away.
 */

type KeptBlocks = { map: Map<string, Uint8Array> };
type KeptCids = { set: Set<string> };

/** Whether `blocks` keeps its CIDs as strings in a Map (true for the pinned @atproto/repo). */
export function keepsBlockKeys(blocks: BlockMap): boolean {
  const map = (blocks as unknown as Partial<KeptBlocks>).map;
  return map instanceof Map && keyedByStrings(map.keys());
}

/** Whether `cids` keeps its CIDs as strings in a Set (true for the pinned @atproto/repo). */
export function keepsCidKeys(cids: CidSet): boolean {
  const set = (cids as unknown as Partial<KeptCids>).set;
  return set instanceof Set && keyedByStrings(set.values());
}

/** The first key is a string (an empty collection has nothing to misread). */
function keyedByStrings(keys: Iterator<unknown>): boolean {
  const first = keys.next();
  return first.done === true || typeof first.value === "string";
}

/** Each block's CID string and bytes, in the map's order. */
export function blockEntries(blocks: BlockMap): Array<{ cid: string; bytes: Uint8Array }> {
  if (!keepsBlockKeys(blocks)) return blocks.entries().map((entry) => ({ cid: entry.cid.toString(), bytes: entry.bytes }));
  return Array.from((blocks as unknown as KeptBlocks).map, ([cid, bytes]) => ({ cid, bytes }));
}

/** The set's CIDs as strings. */
export function cidStrings(cids: CidSet): string[] {
  if (!keepsCidKeys(cids)) return cids.toList().map((cid) => cid.toString());
  return Array.from((cids as unknown as KeptCids).set);
}

/** Adds every block of `from` to `into` (BlockMap.addMap, without parsing and printing each CID again). */
export function addBlocks(into: BlockMap, from: BlockMap): void {
  if (!keepsBlockKeys(into) || !keepsBlockKeys(from)) {
    into.addMap(from);
    return;
  }
  const target = (into as unknown as KeptBlocks).map;
  for (const [cid, bytes] of (from as unknown as KeptBlocks).map) target.set(cid, bytes);
}
