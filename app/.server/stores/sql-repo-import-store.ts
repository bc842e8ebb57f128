import { shape, type ShapeRow } from "../db/row-shape.ts";
import { tables } from "../db/rows.generated.ts";
import { all, at, BYTEWISE, get, run, send, sql, statementOf, type Database, type Program } from "../db/sql.ts";
import type { ImportedHead, ImportOutcome, ImportStatus, MissingBlob, RepoImportStore, StagedRecord } from "../repo/repo-import-store.ts";
import type { BlockRow } from "../repo/repo-store.ts";
import { randomToken } from "../util/crypto.ts";
import { expiredRowsCleanup } from "./expired-rows.ts";
import { lockAccountData } from "./locks.ts";

/**
 * Abandoned imports (a crash, a process stopped mid-import) removed when the next one begins: two, each possibly a
 * whole CAR's rows, so that removal outpaces the one import a start adds (expired-rows.ts).
 */
const IMPORT_CLEANUP_BATCH = 2;
const deleteExpiredImports = expiredRowsCleanup("RepoImport", "id", "expiresAt", IMPORT_CLEANUP_BATCH);

/** Rows per INSERT: a few hundred parameters, far below both engines' limits. */
const ROWS_PER_STATEMENT = 64;

const HEAD_ROW = shape({ deactivatedAt: "time?", cid: "string?", rev: "string?" });
const COUNT_ROW = shape({ n: "integer" });
const MISSING_ROW = shape({ cid: "string", path: "string" });
const BLOCK_ROW = tables.RepoImportBlock.pick("cid", "content");

/** Statements whose text depends on how many rows they carry, made once per count. */
function byCount(make: (count: number) => string): (count: number) => ReturnType<typeof statementOf> {
  const made = new Map<number, ReturnType<typeof statementOf>>();
  return (count) => {
    let statement = made.get(count);
    if (!statement) made.set(count, (statement = statementOf(make(count))));
    return statement;
  };
}

const values = (count: number, row: string) => Array.from({ length: count }, () => row).join(", ");
const insertBlocks = byCount((n) => `INSERT INTO "RepoImportBlock" ("importId", "cid", "content") VALUES ${values(n, "(?, ?, ?)")} ON CONFLICT DO NOTHING`);
const insertNodes = byCount((n) => `INSERT INTO "RepoImportNode" ("importId", "cid") VALUES ${values(n, "(?, ?)")} ON CONFLICT DO NOTHING`);
const insertRecords = byCount((n) => `INSERT INTO "RepoImportRecord" ("importId", "collection", "rkey", "cid", "value") VALUES ${values(n, "(?, ?, ?, ?, ?)")}`);
const insertBlobRefs = byCount((n) => `INSERT INTO "RepoImportBlobRef" ("importId", "collection", "rkey", "blobCid") VALUES ${values(n, "(?, ?, ?, ?)")} ON CONFLICT DO NOTHING`);
const selectBlocks = byCount((n) => `SELECT "cid", "content" FROM "RepoImportBlock" WHERE "importId" = ? AND "cid" IN (${values(n, "?")})`);

function chunked<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let start = 0; start < items.length; start += ROWS_PER_STATEMENT) out.push(items.slice(start, start + ROWS_PER_STATEMENT));
  return out;
}

/**
 * Imports staged in RepoImport* rows and applied in one transaction (docs/decisions/0055). The staging rows hold no
 * account data until applied: the account's own rows change only in `apply`, all at once.
 */
export class SqlRepoImportStore implements RepoImportStore {
  constructor(private readonly db: Database) {}

  async begin(did: string, now: number, expiresAt: number) {
    const id = randomToken("imp", 16);
    await this.db.transaction(function* (): Program<void> {
      yield* run(deleteExpiredImports(now));
      yield* run(sql`INSERT INTO "RepoImport" ("id", "did", "expiresAt") VALUES (${id}, ${did}, ${at(expiresAt)})`);
    });
    return id;
  }

  async stageBlocks(importId: string, blocks: ReadonlyArray<{ cid: string; bytes: Uint8Array }>) {
    if (blocks.length === 0) return;
    await this.db.transaction(function* (): Program<void> {
      for (const rows of chunked(blocks)) yield* send(insertBlocks(rows.length)(...rows.flatMap((block) => [importId, block.cid, block.bytes])));
    });
  }

  async stagedBlocks(importId: string, cids: readonly string[]) {
    if (cids.length === 0) return [];
    return this.db.execute(function* (): Program<BlockRow[]> {
      const found: BlockRow[] = [];
      for (const group of chunked(cids)) {
        for (const row of yield* all(BLOCK_ROW, selectBlocks(group.length)(importId, ...group))) found.push({ cid: row.cid, bytes: row.content });
      }
      return found;
    });
  }

  async stageTree(importId: string, nodes: readonly string[], records: readonly StagedRecord[]) {
    const refs = records.flatMap((record) => record.blobCids.map((blobCid) => [importId, record.collection, record.rkey, blobCid]));
    await this.db.transaction(function* (): Program<void> {
      for (const rows of chunked(nodes)) yield* send(insertNodes(rows.length)(...rows.flatMap((cid) => [importId, cid])));
      for (const rows of chunked(records)) {
        yield* send(insertRecords(rows.length)(...rows.flatMap((record) => [importId, record.collection, record.rkey, record.cid, record.json])));
      }
      for (const rows of chunked(refs)) yield* send(insertBlobRefs(rows.length)(...rows.flat()));
    });
  }

  async apply(importId: string, imported: ImportedHead, now: number) {
    const { did, base, head, commitBlock } = imported;
    return this.db.transaction(function* (): Program<ImportOutcome> {
      // The lock every commit, upload and status change of the account takes first (sql-repo-store.ts).
      yield* lockAccountData(did);
      const current = yield* get(HEAD_ROW, sql`SELECT a."deactivatedAt" AS "deactivatedAt", r."cid" AS "cid", r."rev" AS "rev"
        FROM "Account" a LEFT JOIN "RepoRoot" r ON r."did" = a."did" WHERE a."did" = ${did}`);
      if (!current) return "no-account";
      if (current.deactivatedAt === null) return "active";
      if ((current.cid ?? undefined) !== base?.cid) return "head-moved";
      yield* replaceRepository(importId, imported, now);
      yield* followReferences(did, now);
      const moved = base
        ? yield* run(sql`UPDATE "RepoRoot" SET "cid" = ${head.cid}, "rev" = ${head.rev}, "updatedAt" = ${at(now)} WHERE "did" = ${did}`)
        : yield* run(sql`INSERT INTO "RepoRoot" ("did", "cid", "rev", "updatedAt") VALUES (${did}, ${head.cid}, ${head.rev}, ${at(now)})`);
      if (moved !== 1) throw new Error(`The head of ${did} did not move`);
      yield* send(sql`INSERT INTO "RepoBlock" ("did", "cid", "repoRev", "content") VALUES (${did}, ${head.cid}, ${head.rev}, ${commitBlock}) ON CONFLICT DO NOTHING`);
      return "imported";
    });
  }

  async discard(importId: string) {
    await this.db.execute(function* (): Program<void> {
      yield* run(sql`DELETE FROM "RepoImport" WHERE "id" = ${importId}`);
    });
  }

  async status(did: string) {
    return this.db.snapshot(function* (): Program<ImportStatus | undefined> {
      const head = yield* get(HEAD_ROW, sql`SELECT a."deactivatedAt" AS "deactivatedAt", r."cid" AS "cid", r."rev" AS "rev"
        FROM "Account" a LEFT JOIN "RepoRoot" r ON r."did" = a."did" WHERE a."did" = ${did}`);
      if (!head) return undefined;
      const count = function* (statement: ReturnType<typeof sql>): Program<number> {
        return (yield* get(COUNT_ROW, statement))?.n ?? 0;
      };
      return {
        head: head.cid !== null && head.rev !== null ? { cid: head.cid, rev: head.rev } : undefined,
        blocks: yield* count(sql`SELECT COUNT(*) AS "n" FROM "RepoBlock" WHERE "did" = ${did}`),
        records: yield* count(sql`SELECT COUNT(*) AS "n" FROM "Record" WHERE "did" = ${did}`),
        expectedBlobs: yield* count(sql`SELECT COUNT(DISTINCT "blobCid") AS "n" FROM "RecordBlob" WHERE "did" = ${did}`),
        importedBlobs: yield* count(sql`SELECT COUNT(*) AS "n" FROM "Blob" WHERE "did" = ${did}`),
      };
    });
  }

  async missingBlobs(did: string, options: { cursor?: string; limit: number }) {
    const cursor = options.cursor ?? "";
    const { limit } = options;
    const rows = await this.db.execute(function* (): Program<Array<ShapeRow<typeof MISSING_ROW>>> {
      // One record naming each blob: the least path, as collection and record key hold no "/" (NSID and record key syntax).
      return yield* all(MISSING_ROW, sql`SELECT rb."blobCid" AS "cid", MIN(rb."collection" || '/' || rb."rkey") AS "path" FROM "RecordBlob" rb
        WHERE rb."did" = ${did} AND rb."blobCid" ${BYTEWISE} > ${cursor}
          AND NOT EXISTS (SELECT 1 FROM "Blob" b WHERE b."did" = rb."did" AND b."cid" = rb."blobCid")
        GROUP BY rb."blobCid" ORDER BY rb."blobCid" ${BYTEWISE} LIMIT ${limit}`);
    });
    return rows.map(({ cid, path }): MissingBlob => {
      const slash = path.indexOf("/");
      return { cid, collection: path.slice(0, slash), rkey: path.slice(slash + 1) };
    });
  }
}

/**
 * The account's blocks, records and blob references become the import's: only the blocks its tree reaches (MST nodes
 * and records' blocks), each added at the new commit's revision.
 */
function* replaceRepository(importId: string, imported: ImportedHead, now: number): Program<void> {
  const { did, head } = imported;
  // Deleting the records deletes their blob references (RecordBlob cascades).
  yield* send(sql`DELETE FROM "Record" WHERE "did" = ${did}`);
  yield* send(sql`DELETE FROM "RepoBlock" WHERE "did" = ${did}`);
  yield* send(sql`INSERT INTO "RepoBlock" ("did", "cid", "repoRev", "content")
    SELECT ${did}, b."cid", ${head.rev}, b."content" FROM "RepoImportBlock" b
    WHERE b."importId" = ${importId}
      AND (EXISTS (SELECT 1 FROM "RepoImportNode" n WHERE n."importId" = b."importId" AND n."cid" = b."cid")
        OR EXISTS (SELECT 1 FROM "RepoImportRecord" r WHERE r."importId" = b."importId" AND r."cid" = b."cid"))`);
  yield* send(sql`INSERT INTO "Record" ("did", "collection", "rkey", "cid", "value", "repoRev", "createdAt", "updatedAt")
    SELECT ${did}, "collection", "rkey", "cid", "value", ${head.rev}, ${at(now)}, ${at(now)} FROM "RepoImportRecord" WHERE "importId" = ${importId}`);
  yield* send(sql`INSERT INTO "RecordBlob" ("did", "collection", "rkey", "blobCid")
    SELECT ${did}, "collection", "rkey", "blobCid" FROM "RepoImportBlobRef" WHERE "importId" = ${importId}`);
}

/**
 * The account's blobs after its records changed all at once: a blob some record now references is kept; one that no
 * record references any more starts its grace period (docs/decisions/0008), as after any record write.
 */
function* followReferences(did: string, now: number): Program<void> {
  yield* send(sql`UPDATE "Blob" SET "unreferencedSince" = NULL WHERE "did" = ${did} AND "unreferencedSince" IS NOT NULL
    AND EXISTS (SELECT 1 FROM "RecordBlob" rb WHERE rb."did" = "Blob"."did" AND rb."blobCid" = "Blob"."cid")`);
  yield* send(sql`UPDATE "Blob" SET "unreferencedSince" = ${at(now)} WHERE "did" = ${did} AND "unreferencedSince" IS NULL
    AND NOT EXISTS (SELECT 1 FROM "RecordBlob" rb WHERE rb."did" = "Blob"."did" AND rb."blobCid" = "Blob"."cid")`);
}
