import { mkdir, open, rename, rm, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { CONTENT_PIECE_BYTES, isContentKey, type BlobContentStore, type ContentReader, type ContentWriter } from "./blob-content.ts";

/**
 * Blob bytes as files under one folder (docs/decisions/0043): `<folder>/<k0k1>/<key>`, sharded by the key's first two
 * hexadecimal digits so that no folder holds more than a 256th of them. A copy is written to `<folder>/tmp/<key>`,
 * flushed to the disk, then renamed into place and its folder flushed too: a file under a shard is always whole,
 * whatever crashes when (POSIX rename(2) replaces atomically). Folders are made on first use, readable by this user
 * only.
 */
export class DiskBlobContent implements BlobContentStore {
  readonly kind = "disk";

  constructor(private readonly folder: string) {}

  async create(key: string): Promise<ContentWriter> {
    const temporary = this.temporaryPath(key);
    await mkdir(path.dirname(temporary), { recursive: true, mode: 0o700 });
    // "wx": never over a file already there (keys are random and never reused, so there is none).
    const file = await open(temporary, "wx", 0o600);
    return new FileWriter(file, temporary, this.storedPath(key));
  }

  async open(key: string): Promise<ContentReader | undefined> {
    let file: FileHandle;
    try {
      file = await open(this.storedPath(key), "r");
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
    return new FileReader(file);
  }

  async remove(key: string): Promise<void> {
    await rm(this.storedPath(key), { force: true });
    await rm(this.temporaryPath(key), { force: true });
  }

  private storedPath(key: string): string {
    return path.join(this.folder, checkedKey(key).slice(0, 2), key);
  }

  private temporaryPath(key: string): string {
    return path.join(this.folder, "tmp", checkedKey(key));
  }
}

class FileWriter implements ContentWriter {
  private closed = false;

  constructor(
    private readonly file: FileHandle,
    private readonly temporary: string,
    private readonly stored: string,
  ) {}

  async write(bytes: Uint8Array): Promise<void> {
    // A write may take fewer bytes than offered; the rest follows.
    for (let offset = 0; offset < bytes.length; ) offset += (await this.file.write(bytes, offset)).bytesWritten;
  }

  async finish(): Promise<void> {
    await this.file.datasync();
    await this.close();
    const folder = path.dirname(this.stored);
    await mkdir(folder, { recursive: true, mode: 0o700 });
    await rename(this.temporary, this.stored);
    // The rename itself is durable once the folder that now names the file is.
    const directory = await open(folder, "r");
    try {
      await directory.sync();
    } finally {
      await directory.close();
    }
  }

  async abort(): Promise<void> {
    await this.close();
    await rm(this.temporary, { force: true });
  }

  private async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.file.close();
  }
}

class FileReader implements ContentReader {
  private closed = false;

  constructor(private readonly file: FileHandle) {}

  async read(): Promise<Uint8Array | undefined> {
    if (this.closed) return undefined;
    // A fresh buffer per piece: the one handed out is the consumer's until it has been sent.
    const buffer = Buffer.allocUnsafe(CONTENT_PIECE_BYTES);
    const { bytesRead } = await this.file.read(buffer, 0, CONTENT_PIECE_BYTES, null);
    if (bytesRead > 0) return buffer.subarray(0, bytesRead);
    await this.close();
    return undefined;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.file.close();
  }
}

function checkedKey(key: string): string {
  if (!isContentKey(key)) throw new Error(`Not a blob content key: ${JSON.stringify(key)}`);
  return key;
}

function isMissing(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "ENOENT";
}
