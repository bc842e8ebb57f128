/**
 * Repository blocks recently read or written, by CID, bounded in bytes (least recently used go first).
 *
 * A block's CID is the hash of its bytes, so a cached block can never be stale, in this process or after another
 * process changed the repository: what changes is which blocks the head reaches, and that is read from the
 * database. The commit path (repo-writer.ts) walks the same few MST nodes of a repository on every write; without
 * the cache each of those reads would be a round trip to the database (docs/decisions/0027).
 */
export class BlockCache {
  private readonly blocks = new Map<string, Uint8Array>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get(cid: string): Uint8Array | undefined {
    const block = this.blocks.get(cid);
    if (block) {
      // Map keeps insertion order: re-inserting marks it the most recently used.
      this.blocks.delete(cid);
      this.blocks.set(cid, block);
    }
    return block;
  }

  set(cid: string, block: Uint8Array): void {
    if (block.byteLength > this.maxBytes || this.blocks.has(cid)) return;
    this.blocks.set(cid, block);
    this.bytes += block.byteLength;
    for (const [oldest, bytes] of this.blocks) {
      if (this.bytes <= this.maxBytes) break;
      this.blocks.delete(oldest);
      this.bytes -= bytes.byteLength;
    }
  }

  get size(): number {
    return this.blocks.size;
  }
}
