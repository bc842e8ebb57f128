import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { openTestDatabase, type TestDatabase } from "../../../tests/helpers/databases.ts";
import { countOf, countRows, emptyTables } from "../../../tests/helpers/store-fixtures.ts";
import { at, run, sql } from "../db/sql.ts";
import { SqlBlobChunks } from "../stores/sql-blob-chunks.ts";
import { CONTENT_PIECE_BYTES, type BlobContentStore, type ContentReader } from "./blob-content.ts";
import { DiskBlobContent } from "./disk-blob-content.ts";

/**
 * The content stores' contract (docs/decisions/0043): the files under the blob folder, and the chunks in the database
 * on either engine. Both take a copy piece by piece and give it back piece by piece, never more than a piece at a
 * time; an aborted or removed copy leaves nothing behind.
 */

type Variant = {
  store: BlobContentStore;
  /** What the upload does before writing a copy: registers its key (the database's chunks refer to it). */
  register(key: string): Promise<void>;
  /** Files, or chunk rows, the store holds. */
  leftovers(): Promise<number>;
  reset(): Promise<void>;
  close(): Promise<void>;
};

function filesUnder(folder: string): string[] {
  return readdirSync(folder, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}

function diskVariant(): Variant {
  let folder = mkdtempSync(path.join(os.tmpdir(), "atrium-blob-content-"));
  return {
    get store() {
      return new DiskBlobContent(folder);
    },
    register: async () => {},
    leftovers: async () => filesUnder(folder).length,
    async reset() {
      rmSync(folder, { recursive: true, force: true });
      folder = mkdtempSync(path.join(os.tmpdir(), "atrium-blob-content-"));
    },
    close: async () => rmSync(folder, { recursive: true, force: true }),
  };
}

async function databaseVariant(engine: "sqlite" | "postgresql"): Promise<Variant> {
  const test: TestDatabase = await openTestDatabase(engine);
  return {
    store: new SqlBlobChunks(test.db),
    register: async (key) => {
      await test.db.execute(() => run(sql`INSERT INTO "BlobContent" ("key", "cid", "state", "dueAt") VALUES (${key}, NULL, 'writing', ${at(0)})`));
    },
    leftovers: () => countRows(test.db, "BlobChunk"),
    reset: () => emptyTables(test.db),
    close: () => test.close(),
  };
}

const newKey = () => randomBytes(16).toString("hex");

async function readAll(reader: ContentReader): Promise<{ bytes: Buffer; pieces: number[] }> {
  const pieces: Uint8Array[] = [];
  for (let piece = await reader.read(); piece !== undefined; piece = await reader.read()) pieces.push(piece);
  return { bytes: Buffer.concat(pieces), pieces: pieces.map((piece) => piece.byteLength) };
}

describe.each([
  ["files under the blob folder", () => Promise.resolve(diskVariant())],
  ["chunks in the database on sqlite", () => databaseVariant("sqlite")],
  ["chunks in the database on postgresql", () => databaseVariant("postgresql")],
] as const)("the content store of %s", (_name, make) => {
  let variant: Variant;
  beforeAll(async () => {
    variant = await make();
  });
  afterAll(() => variant?.close());
  beforeEach(() => variant.reset());

  async function written(bytes: Uint8Array, cuts: number[]): Promise<string> {
    const key = newKey();
    await variant.register(key);
    const writer = await variant.store.create(key);
    let from = 0;
    for (const cut of [...cuts, bytes.length]) {
      await writer.write(bytes.subarray(from, cut));
      from = cut;
    }
    await writer.finish();
    return key;
  }

  it("gives a copy back as written, in pieces of at most CONTENT_PIECE_BYTES, however it was written", async () => {
    const bytes = randomBytes(3 * CONTENT_PIECE_BYTES + 12_345);
    const key = await written(bytes, [1, 7, CONTENT_PIECE_BYTES, CONTENT_PIECE_BYTES + 1, 2 * CONTENT_PIECE_BYTES + 100]);
    const reader = (await variant.store.open(key))!;
    const { bytes: read, pieces } = await readAll(reader);
    expect(read.equals(bytes)).toBe(true);
    expect(Math.max(...pieces)).toBeLessThanOrEqual(CONTENT_PIECE_BYTES);
    expect(await reader.read()).toBeUndefined();
  });

  it("has no copy under a key never written", async () => {
    expect(await variant.store.open(newKey())).toBeUndefined();
  });

  it("an aborted copy leaves nothing behind, whatever was written of it", async () => {
    const key = newKey();
    await variant.register(key);
    const writer = await variant.store.create(key);
    await writer.write(randomBytes(2 * CONTENT_PIECE_BYTES + 5));
    await writer.abort();
    expect(await variant.leftovers()).toBe(0);
    expect(await variant.store.open(key)).toBeUndefined();
  });

  it("a removed copy leaves nothing behind, and removing it again (or a key never written) does nothing", async () => {
    const kept = await written(randomBytes(100), []);
    const key = await written(randomBytes(CONTENT_PIECE_BYTES + 1), []);
    await variant.store.remove(key);
    await variant.store.remove(key);
    await variant.store.remove(newKey());
    expect(await variant.store.open(key)).toBeUndefined();
    expect(await variant.leftovers()).toBe(1);
    expect((await readAll((await variant.store.open(kept))!)).bytes.length).toBe(100);
  });

  it("a reader closed early reads nothing more", async () => {
    const key = await written(randomBytes(3 * CONTENT_PIECE_BYTES), []);
    const reader = (await variant.store.open(key))!;
    expect((await reader.read())?.byteLength).toBe(CONTENT_PIECE_BYTES);
    await reader.close();
    expect(await reader.read()).toBeUndefined();
  });
});

describe("the content store of files under the blob folder", () => {
  let folder: string;
  beforeEach(() => {
    folder = mkdtempSync(path.join(os.tmpdir(), "atrium-blob-files-"));
    return () => rmSync(folder, { recursive: true, force: true });
  });

  it("shows a copy at its place only once whole: written aside, then renamed into place", async () => {
    const store = new DiskBlobContent(folder);
    const key = newKey();
    const writer = await store.create(key);
    await writer.write(randomBytes(1000));
    expect(await store.open(key)).toBeUndefined();
    expect(filesUnder(folder).map((file) => path.relative(folder, file))).toEqual([path.join("tmp", key)]);
    await writer.finish();
    expect(filesUnder(folder).map((file) => path.relative(folder, file))).toEqual([path.join(key.slice(0, 2), key)]);
  });

  it("keeps its files and folders to the server's user", async () => {
    const store = new DiskBlobContent(folder);
    const key = newKey();
    const writer = await store.create(key);
    await writer.write(randomBytes(10));
    await writer.finish();
    expect(statSync(path.join(folder, key.slice(0, 2), key)).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(folder, key.slice(0, 2))).mode & 0o777).toBe(0o700);
  });

  it("refuses a key that is not one of its own, so that no key reaches outside the folder", async () => {
    const store = new DiskBlobContent(folder);
    for (const key of ["../../etc/passwd", "", "ABCDEF0123456789ABCDEF0123456789", `${newKey()}/x`]) {
      await expect(store.create(key)).rejects.toThrow(/Not a blob content key/);
      await expect(store.open(key)).rejects.toThrow(/Not a blob content key/);
    }
  });

  it("a reader keeps reading a copy removed meanwhile: the file stays open", async () => {
    const store = new DiskBlobContent(folder);
    const key = newKey();
    const bytes = randomBytes(2 * CONTENT_PIECE_BYTES);
    const writer = await store.create(key);
    await writer.write(bytes);
    await writer.finish();
    const reader = (await store.open(key))!;
    await store.remove(key);
    expect((await readAll(reader)).bytes.equals(bytes)).toBe(true);
  });
});

describe("the content store of chunks in the database", () => {
  let test: TestDatabase;
  beforeAll(async () => {
    test = await openTestDatabase("sqlite");
  });
  afterAll(() => test?.close());
  beforeEach(() => emptyTables(test.db));

  it("inserts each chunk as soon as it is full: a writer holds at most one chunk, whatever the size", async () => {
    const key = newKey();
    await test.db.execute(() => run(sql`INSERT INTO "BlobContent" ("key", "cid", "state", "dueAt") VALUES (${key}, NULL, 'writing', ${at(0)})`));
    const writer = await new SqlBlobChunks(test.db).create(key);
    const counts: number[] = [];
    for (let i = 0; i < 5; i++) {
      await writer.write(randomBytes(CONTENT_PIECE_BYTES / 2 + 1));
      counts.push(await countRows(test.db, "BlobChunk"));
    }
    await writer.finish();
    expect(counts).toEqual([0, 1, 1, 2, 2]);
    expect(await countRows(test.db, "BlobChunk")).toBe(3);
  });

  it("a copy's chunks go with its register entry", async () => {
    const key = newKey();
    await test.db.execute(() => run(sql`INSERT INTO "BlobContent" ("key", "cid", "state", "dueAt") VALUES (${key}, NULL, 'writing', ${at(0)})`));
    const writer = await new SqlBlobChunks(test.db).create(key);
    await writer.write(randomBytes(3 * CONTENT_PIECE_BYTES));
    await writer.finish();
    expect(await countOf(test.db, sql`SELECT COUNT(*) AS "n" FROM "BlobChunk" WHERE "key" = ${key}`)).toBe(3);
    await test.db.execute(() => run(sql`DELETE FROM "BlobContent" WHERE "key" = ${key}`));
    expect(await countOf(test.db, sql`SELECT COUNT(*) AS "n" FROM "BlobChunk" WHERE "key" = ${key}`)).toBe(0);
  });
});
