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

  /** A full chunk is inserted once more bytes follow it: until then it may be the last one, which `finish` inserts. */
  async write(bytes: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < bytes.length) {
      if (this.pendingBytes === CONTENT_PIECE_BYTES) await this.flush();
      const taken = Math.min(bytes.length - offset, CONTENT_PIECE_BYTES - this.pendingBytes);
      this.pending.set(bytes.subarray(offset, offset + taken), this.pendingBytes);
      this.pendingBytes += taken;
      offset += taken;
    }
  }

  /** The last chunk, durably: its commit makes every chunk before it durable too (see `flush`). */
  async finish(): Promise<void> {
    await this.flush(true);
  }

  async abort(): Promise<void> {
    await removeChunks(this.db, this.key);
  }

  /**
   * Inserts the pending bytes as the next chunk, committed on its own. On PostgreSQL every chunk but the last commits
   * without waiting for its WAL to reach the disk (synchronous_commit off for that one transaction): the last one's
   * ordinary commit flushes the WAL up to itself, and so every chunk before it (https://www.postgresql.org/docs/current/wal-async-commit.html:
   * WAL is flushed in order), so that a 5 MiB upload waits for one flush instead of eighty. A crash before it loses
   * chunks of a copy still being written, which nothing reads and the sweep of abandoned writes deletes.
   */
  private async flush(last = false): Promise<void> {
    if (this.pendingBytes === 0) return;
    // A copy of the pending bytes: the driver may still hold the value it was given once the statement has run.
    const bytes = Uint8Array.prototype.slice.call(this.pending, 0, this.pendingBytes);
    const { key } = this;
    const index = this.index++;
    this.pendingBytes = 0;
    const insert = function* (): Program<void> {
      yield* run(sql`INSERT INTO "BlobChunk" ("key", "index", "bytes") VALUES (${key}, ${index}, ${bytes})`);
    };
    if (last) return void (await this.db.execute(insert));
    await this.db.atomicStep({
      sqlite: insert,
      postgresql: function* (): Program<void> {
        yield* run(sql`WITH "unflushed" AS (SELECT set_config('synchronous_commit', 'off', true))
          INSERT INTO "BlobChunk" ("key", "index", "bytes") SELECT CAST(${key} AS TEXT), CAST(${index} AS INTEGER), CAST(${bytes} AS BYTEA) FROM "unflushed"`);
      },
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
