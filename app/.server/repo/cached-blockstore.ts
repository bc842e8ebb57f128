import type { Cid } from "@atproto/lex-data";
import { BlockMap, ReadableBlockstore } from "@atproto/repo";
import type { BlockCache } from "./block-cache.ts";

/**
 * A repository's blocks as @atproto/repo reads them, one at a time by CID: from the process's cache of blocks, else
 * from the database (`readBlock`: the store's own reads, or a held snapshot's). A block found by its CID is the right
 * one whatever the read (its CID is its content's hash: block-cache.ts). `fill`: what is read goes into the cache
 * (the commits' reads); a snapshot's proof leaves the cache as it was (docs/decisions/0042).
 */
export abstract class CachedBlockstore extends ReadableBlockstore {
  constructor(
    private readonly cache: BlockCache,
    private readonly fill: boolean,
  ) {
    super();
  }

  /** The block's content in the database, or undefined. */
  protected abstract readBlock(cid: string): Promise<Uint8Array | undefined>;

  async getBytes(cid: Cid): Promise<Uint8Array | null> {
    const key = cid.toString();
    const cached = this.cache.get(key);
    if (cached) return cached;
    const bytes = await this.readBlock(key);
    if (!bytes) return null;
    if (this.fill) this.cache.set(key, bytes);
    return bytes;
  }

  async has(cid: Cid): Promise<boolean> {
    return (await this.getBytes(cid)) !== null;
  }

  async getBlocks(cids: Cid[]): Promise<{ blocks: BlockMap; missing: Cid[] }> {
    const blocks = new BlockMap();
    const missing: Cid[] = [];
    for (const cid of cids) {
      const bytes = await this.getBytes(cid);
      if (bytes) blocks.set(cid, bytes);
      else missing.push(cid);
    }
    return { blocks, missing };
  }
}
