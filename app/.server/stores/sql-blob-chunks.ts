import { tables } from "../db/rows.generated.ts";
import { get, run, sql, type Database, type Program } from "../db/sql.ts";
import { CONTENT_PIECE_BYTES, type BlobContentStore, type ContentReader, type ContentWriter } from "../blobs/blob-content.ts";

/**
 * Blob bytes in the shared database (docs/decisions/0043), for several machines on one PostgreSQL database: each copy
 * is BlobChunk rows of CONTENT_PIECE_BYTES (the last one shorter), numbered from 0. A writer inserts a chunk as soon
 * as it has one, each in its own statement, so an upload holds at most one chunk; a reader fetches one chunk per
 * query when the next is asked for, so a download does too. The chunks refer to their BlobContent row (the copy's
 * register entry, written before them) and go with it.
 */
export class SqlBlobChunks implements BlobContentStore {
  readonly kind = "database";

  constructor(private readonly db: Database) {}

  async create(key: string): Promise<ContentWriter> {
    return new ChunkWriter(this.db, key);
  }

  async open(key: string): Promise<ContentReader | undefined> {
    const first = await readChunk(this.db, key, 0);
    return first === undefined ? undefined : new ChunkReader(this.db, key, first);
  }

  async remove(key: string): Promise<void> {
    await removeChunks(this.db, key);
  }
}

class ChunkWriter implements ContentWriter {
  private readonly pending = Buffer.allocUnsafe(CONTENT_PIECE_BYTES);
  private pendingBytes = 0;
  private index = 0;

  constructor(
    private readonly db: Database,
    private readonly key: string,
  ) {}

  async write(bytes: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < bytes.length) {
      const taken = Math.min(bytes.length - offset, CONTENT_PIECE_BYTES - this.pendingBytes);
      this.pending.set(bytes.subarray(offset, offset + taken), this.pendingBytes);
      this.pendingBytes += taken;
      offset += taken;
      if (this.pendingBytes === CONTENT_PIECE_BYTES) await this.flush();
    }
  }

  /** Each chunk was committed as it was inserted: what is left is the last one. */
  async finish(): Promise<void> {
    if (this.pendingBytes > 0) await this.flush();
  }

  async abort(): Promise<void> {
    await removeChunks(this.db, this.key);
  }

  private async flush(): Promise<void> {
    // A copy of the pending bytes: the driver may still hold the value it was given once the statement has run.
    const bytes = Uint8Array.prototype.slice.call(this.pending, 0, this.pendingBytes);
    const { key } = this;
    const index = this.index++;
    this.pendingBytes = 0;
    await this.db.execute(function* (): Program<void> {
      yield* run(sql`INSERT INTO "BlobChunk" ("key", "index", "bytes") VALUES (${key}, ${index}, ${bytes})`);
    });
  }
}

class ChunkReader implements ContentReader {
  /** The next chunk's index; the first was read by `open`. */
  private index = 0;
  private closed = false;

  constructor(
    private readonly db: Database,
    private readonly key: string,
    private first: Uint8Array | undefined,
  ) {}

  async read(): Promise<Uint8Array | undefined> {
    if (this.closed) return undefined;
    const piece = this.first ?? (await readChunk(this.db, this.key, this.index));
    this.first = undefined;
    this.index++;
    if (piece === undefined) this.closed = true;
    return piece;
  }

  async close(): Promise<void> {
    this.first = undefined;
    this.closed = true;
  }
}

async function readChunk(db: Database, key: string, index: number): Promise<Uint8Array | undefined> {
  const row = await db.execute(function* (): Program<{ bytes: Uint8Array } | undefined> {
    return yield* get(tables.BlobChunk.pick("bytes"), sql`SELECT "bytes" FROM "BlobChunk" WHERE "key" = ${key} AND "index" = ${index}`);
  });
  return row?.bytes;
}

async function removeChunks(db: Database, key: string): Promise<void> {
  await db.execute(function* (): Program<void> {
    yield* run(sql`DELETE FROM "BlobChunk" WHERE "key" = ${key}`);
  });
}
