import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Sqlite from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { contentStoreWith } from "../../../tests/helpers/blob-content-faults.ts";
import { migrateSqliteBefore, rowsOf } from "../../../tests/helpers/databases.ts";
import { createTestDatabase, dropTestDatabase } from "../../../tests/helpers/postgres.ts";
import { countOf } from "../../../tests/helpers/store-fixtures.ts";
import { migrateDatabase } from "../db/migrate.ts";
import { PostgresDatabase } from "../db/postgres-database.ts";
import { at, run, sql, type Database } from "../db/sql.ts";
import { SqliteDatabase } from "../db/sqlite-database.ts";
import { SILENT_LOGGER } from "../observability/logger.ts";
import { rawCid } from "../repo/identifiers.ts";
import { SqlBlobChunks } from "../stores/sql-blob-chunks.ts";
import { SqlBlobStore } from "../stores/sql-blob-store.ts";
import type { BlobContentStore } from "./blob-content.ts";
import { moveLegacyBlobBytes } from "./blob-bytes-migration.ts";
import { DiskBlobContent } from "./disk-blob-content.ts";

/**
 * docs/decisions/0043, "Existing blobs move at upgrade": a database whose blobs keep their bytes in their rows, as every
 * database did before the migration 20261128220814_blob_content_store, gets them moved into the content store at start:
 * each blob's bytes readable from one copy per CID, its row emptied; resumable after an interruption, and right when
 * several processes start at once.
 */
const MIGRATION = "20261128220814_blob_content_store";
const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
const LIMITS = { quotaBytes: 2 ** 30, unreferencedGraceMs: 3600_000 };

/** Blobs as they were stored before: Alice has three, Bob one of hers (the same bytes) and one of his own. */
const PIECES = { shared: randomBytes(200_000), alices: randomBytes(70_000), small: randomBytes(5), bobs: randomBytes(1) };
const LEGACY: [string, Uint8Array][] = [
  [ALICE, PIECES.shared],
  [ALICE, PIECES.alices],
  [ALICE, PIECES.small],
  [BOB, PIECES.shared],
  [BOB, PIECES.bobs],
];

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempFolder(): string {
  const folder = mkdtempSync(path.join(os.tmpdir(), "atrium-blob-move-"));
  cleanups.push(() => rmSync(folder, { recursive: true, force: true }));
  return folder;
}

async function insertLegacyBlobs(db: Database): Promise<void> {
  // The accounts as that schema had them: the columns of later migrations do not exist yet.
  for (const did of [ALICE, BOB]) {
    await db.execute(() =>
      run(sql`INSERT INTO "Account" ("did", "handle", "email", "passwordHash", "signingKey", "createdAt", "updatedAt")
        VALUES (${did}, ${`${did.slice(-6)}.test`}, ${`${did.slice(-6)}@example.com`}, 'scrypt$16384$8$1$c2FsdA$aGFzaA', '{}', ${at(0)}, ${at(0)})`),
    );
  }
  for (const [did, bytes] of LEGACY) {
    await db.execute(() =>
      run(sql`INSERT INTO "Blob" ("did", "cid", "declaredType", "mimeType", "size", "bytes", "createdAt", "unreferencedSince")
        VALUES (${did}, ${rawCid(bytes)}, 'image/png', 'image/png', ${bytes.length}, ${bytes}, ${at(0)}, NULL)`),
    );
  }
}

/** What a finished move leaves: every row emptied, one stored copy per CID holding its bytes, nothing else. */
async function expectMoved(db: Database, content: BlobContentStore): Promise<void> {
  expect(await countOf(db, sql`SELECT COUNT(*) AS "n" FROM "Blob" WHERE length("bytes") > 0`)).toBe(0);
  expect(await countOf(db, sql`SELECT COUNT(*) AS "n" FROM "Blob"`)).toBe(LEGACY.length);
  const copies = await rowsOf<{ key: string; cid: string; state: string }>(db, sql`SELECT "key", "cid", "state" FROM "BlobContent" ORDER BY "cid"`);
  const distinct = [...new Set(LEGACY.map(([, bytes]) => rawCid(bytes)))].sort();
  expect(copies.map((copy) => [copy.cid, copy.state])).toEqual(distinct.map((cid) => [cid, "stored"]));
  for (const copy of copies) {
    const reader = (await content.open(copy.key))!;
    const pieces: Uint8Array[] = [];
    for (let piece = await reader.read(); piece; piece = await reader.read()) pieces.push(piece);
    expect(rawCid(Buffer.concat(pieces))).toBe(copy.cid);
  }
}

function filesUnder(folder: string): number {
  return readdirSync(folder, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).length;
}

describe(`the move of blob bytes out of their rows, on a SQLite database written before ${MIGRATION}`, () => {
  /** A database at the migration before, with legacy blobs, then migrated to the latest schema. */
  /** A database at the migration before, with legacy blobs, migrated to the latest schema; its store and a blob folder. */
  async function upgraded(): Promise<{ file: string; db: Database; store: SqlBlobStore; folder: string }> {
    const file = path.join(tempFolder(), "atrium.db");
    migrateSqliteBefore(file, MIGRATION);
    const before = new SqliteDatabase(file);
    await insertLegacyBlobs(before);
    await before.close();
    expect(migrateDatabase(file).applied).toContain(MIGRATION);
    const db = new SqliteDatabase(file);
    cleanups.push(() => db.close());
    return { file, db, store: new SqlBlobStore(db, LIMITS), folder: tempFolder() };
  }

  it("moves every blob's bytes into files, one copy per CID, and empties the rows; a second run has nothing to do", async () => {
    const { file, db, store, folder } = await upgraded();
    const content = new DiskBlobContent(folder);
    expect(await moveLegacyBlobBytes(store, content, Date.now, SILENT_LOGGER)).toBe(LEGACY.length);
    await expectMoved(db, content);
    expect(filesUnder(folder)).toBe(4);
    expect(await moveLegacyBlobBytes(store, content, Date.now, SILENT_LOGGER)).toBe(0);
    // The moved rows' pages are free for reuse: the file keeps no blob bytes in its rows.
    const raw = new Sqlite(file, { readonly: true });
    cleanups.push(() => void raw.close());
    expect(raw.prepare(`SELECT SUM(length("bytes")) FROM "Blob"`).pluck().get()).toBe(0);
  });

  it("an interrupted run leaves each blob moved or untouched, and nothing half-written; the next run finishes", async () => {
    const { db, store, folder } = await upgraded();
    const disk = new DiskBlobContent(folder);
    let writes = 0;
    const failingOnThird = contentStoreWith(disk, {
      create: async (key) => {
        const writer = await disk.create(key);
        if (++writes !== 3) return writer;
        return { write: (bytes) => writer.write(bytes), abort: () => writer.abort(), finish: () => Promise.reject(new Error("the disk is full")) };
      },
    });
    await expect(moveLegacyBlobBytes(store, failingOnThird, Date.now, SILENT_LOGGER)).rejects.toThrow(/disk is full/);
    expect(await countOf(db, sql`SELECT COUNT(*) AS "n" FROM "Blob" WHERE length("bytes") = 0`)).toBe(2);
    expect(await countOf(db, sql`SELECT COUNT(*) AS "n" FROM "BlobContent" WHERE "state" <> 'stored'`)).toBe(0);
    expect(filesUnder(folder)).toBe(2);
    expect(await moveLegacyBlobBytes(store, disk, Date.now, SILENT_LOGGER)).toBe(LEGACY.length - 2);
    await expectMoved(db, disk);
    expect(filesUnder(folder)).toBe(4);
  });
});

describe("the move of blob bytes out of their rows, on PostgreSQL, by three processes starting at once", () => {
  it.each(["chunks", "files"] as const)("moves every blob once into %s, one copy per CID, whichever process gets there first", async (kind) => {
    const url = await createTestDatabase();
    const handles = [1, 2, 3].map(() => new PostgresDatabase(url, { poolSize: 3 }));
    cleanups.push(async () => {
      for (const handle of handles) await handle.close();
      await dropTestDatabase(url);
    });
    await insertLegacyBlobs(handles[0]!);
    const folder = tempFolder();
    const contentOf = (db: Database): BlobContentStore => (kind === "chunks" ? new SqlBlobChunks(db) : new DiskBlobContent(folder));
    const moved = await Promise.all(handles.map((db) => moveLegacyBlobBytes(new SqlBlobStore(db, LIMITS), contentOf(db), Date.now, SILENT_LOGGER)));
    // Every blob was adopted by one process (or found adopted with its CID's copy by another): none twice, none missed.
    expect(moved.reduce((sum, count) => sum + count, 0)).toBe(LEGACY.length);
    await expectMoved(handles[0]!, contentOf(handles[0]!));
    const spare = kind === "chunks" ? await countOf(handles[0]!, sql`SELECT COUNT(DISTINCT "key") AS "n" FROM "BlobChunk"`) : filesUnder(folder);
    expect(spare).toBe(4);
  });
});
