import { encode } from "@atproto/lex-cbor";
import { cidForCbor } from "@atproto/lex-data";
import { BlockMap, CidSet } from "@atproto/repo";
import { describe, expect, it } from "vitest";
import { addBlocks, blockEntries, cidStrings, keepsBlockKeys, keepsCidKeys } from "./block-keys.ts";

async function blocks(...texts: string[]): Promise<BlockMap> {
  const map = new BlockMap();
  for (const text of texts) await map.add({ text });
  return map;
}

/** What the library's own iteration gives, for comparison. */
const publicEntries = (map: BlockMap) => map.entries().map((entry) => ({ cid: entry.cid.toString(), bytes: entry.bytes }));

describe("block-keys: @atproto/repo's CID strings read as the library keeps them", () => {
  it("the pinned @atproto/repo keeps them as strings (an upgrade that changes this fails here, not in speed)", async () => {
    expect(keepsBlockKeys(await blocks("a"))).toBe(true);
    expect(keepsCidKeys(new CidSet())).toBe(true);
  });

  it("gives the entries and CIDs the library's public iteration gives", async () => {
    const map = await blocks("a", "b", "c");
    expect(blockEntries(map)).toEqual(publicEntries(map));
    const cids = new CidSet(map.cids());
    expect(cidStrings(cids)).toEqual(cids.toList().map((cid) => cid.toString()));
  });

  it("merges one map into another as addMap does: every block once, the bytes as given", async () => {
    const into = await blocks("a", "b");
    const from = await blocks("b", "c");
    const expected = (await blocks("a", "b")).addMap(from);
    addBlocks(into, from);
    expect(into.equals(expected)).toBe(true);
    expect(blockEntries(into)).toEqual(publicEntries(expected));
  });

  it("falls back to the public API for a map kept otherwise", async () => {
    const bytes = encode({ text: "x" });
    const cid = await cidForCbor(bytes);
    const other = Object.assign(Object.create(BlockMap.prototype) as BlockMap, { entries: () => [{ cid, bytes }], addMap: BlockMap.prototype.addMap });
    expect(keepsBlockKeys(other)).toBe(false);
    expect(blockEntries(other)).toEqual([{ cid: cid.toString(), bytes }]);
    // A Map keyed by something else than the CID strings (CID objects, say) is not read as one.
    const objectKeyed = Object.assign(Object.create(BlockMap.prototype) as BlockMap, { map: new Map([[cid, bytes]]), entries: () => [{ cid, bytes }] });
    expect(keepsBlockKeys(objectKeyed)).toBe(false);
    expect(blockEntries(objectKeyed)).toEqual([{ cid: cid.toString(), bytes }]);
  });
});
