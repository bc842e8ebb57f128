import { all, at, BYTEWISE, get, run, sql, type Database, type Program } from "../db/sql.ts";
import { blobCidsIn } from "../repo/blob-refs.ts";
import type { RecordWrite, RepoStore, StoredRecord, WriteConflict } from "../repo/repo-store.ts";
import { blobReferencesOf, lockAccountData, recordBlobReferences, removeExpiredBlobs } from "./sql-blob-store.ts";

type RecordRow = { collection: string; rkey: string; cid: string; value: string; createdAt: number; updatedAt: number };

function toRecord(row: RecordRow): StoredRecord {
  return { ...row, value: JSON.parse(row.value) as unknown };
}

/** Record keys sort bytewise on both engines (getRecord's cursor walks them in that order). */
const LAST_KEY = "\uffff";

/**
 * Records and preferences: applyWrites is all-or-nothing (docs/decisions/0002), blob references included
 * (docs/decisions/0008).
 */
export class SqlRepoStore implements RepoStore {
  constructor(
    private readonly db: Database,
    /** How long a blob may stay unreferenced (the blob store's setting), for the cleanup a record write does. */
    private readonly blobGraceMs: number,
  ) {}

  async getRecord(did: string, collection: string, rkey: string) {
    return this.db.execute(function* (): Program<StoredRecord | undefined> {
      const row = yield* get<RecordRow>(sql`SELECT "collection", "rkey", "cid", "value", "createdAt", "updatedAt" FROM "Record"
        WHERE "did" = ${did} AND "collection" = ${collection} AND "rkey" = ${rkey}`);
      return row ? toRecord(row) : undefined;
    });
  }

  async listRecords(did: string, collection: string, options: { limit: number; cursor?: string; reverse: boolean }) {
    const { limit, reverse } = options;
    return this.db.execute(function* (): Program<StoredRecord[]> {
      const rows = reverse
        ? yield* all<RecordRow>(sql`SELECT "collection", "rkey", "cid", "value", "createdAt", "updatedAt" FROM "Record"
            WHERE "did" = ${did} AND "collection" = ${collection} AND "rkey" ${BYTEWISE} > ${options.cursor ?? ""}
            ORDER BY "rkey" ${BYTEWISE} ASC LIMIT ${limit}`)
        : yield* all<RecordRow>(sql`SELECT "collection", "rkey", "cid", "value", "createdAt", "updatedAt" FROM "Record"
            WHERE "did" = ${did} AND "collection" = ${collection} AND "rkey" ${BYTEWISE} < ${options.cursor ?? LAST_KEY}
            ORDER BY "rkey" ${BYTEWISE} DESC LIMIT ${limit}`);
      return rows.map(toRecord);
    });
  }

  async applyWrites(did: string, writes: RecordWrite[], now: number): Promise<WriteConflict | undefined> {
    // Walked before the transaction: no lock is held while records are searched for blob refs.
    const blobCids = writes.map((write) => ("value" in write ? blobCidsIn(write.value) : []));
    const graceMs = this.blobGraceMs;
    try {
      return await this.db.transaction(function* (): Program<undefined> {
        yield* lockAccountData(did);
        for (const [index, write] of writes.entries()) {
          // docs/decisions/0008: a record's blob references change with the record, in the same transaction.
          // A create claims a free key, and a record's references go with it when it is deleted: none to read.
          const previousBlobCids = write.action === "create" ? [] : yield* blobReferencesOf(did, write.collection, write.rkey);
          const conflict = yield* applyOne(did, write, now);
          if (conflict) throw new ConflictSignal(conflict);
          yield* recordBlobReferences(did, write.collection, write.rkey, previousBlobCids, blobCids[index]!, now);
        }
        yield* removeExpiredBlobs(now, graceMs);
        return undefined;
      });
    } catch (error) {
      // Throwing inside the transaction rolled every write back.
      if (error instanceof ConflictSignal) return error.conflict;
      throw error;
    }
  }

  async getPreferences(did: string) {
    return this.db.execute(function* (): Program<unknown[]> {
      const row = yield* get<{ value: string }>(sql`SELECT "value" FROM "Preferences" WHERE "did" = ${did}`);
      return row ? (JSON.parse(row.value) as unknown[]) : [];
    });
  }

  async putPreferences(did: string, preferences: unknown[], now: number) {
    const value = JSON.stringify(preferences);
    return this.db.execute(function* (): Program<void> {
      yield* run(sql`INSERT INTO "Preferences" ("did", "value", "updatedAt") VALUES (${did}, ${value}, ${at(now)})
        ON CONFLICT ("did") DO UPDATE SET "value" = excluded."value", "updatedAt" = excluded."updatedAt"`);
    });
  }
}

function* applyOne(did: string, write: RecordWrite, now: number): Program<WriteConflict | undefined> {
  const { collection, rkey } = write;
  if (write.action === "create") {
    const inserted = yield* run(sql`INSERT INTO "Record" ("did", "collection", "rkey", "cid", "value", "createdAt", "updatedAt")
      VALUES (${did}, ${collection}, ${rkey}, ${write.cid}, ${JSON.stringify(write.value)}, ${at(now)}, ${at(now)}) ON CONFLICT DO NOTHING`);
    return inserted === 1 ? undefined : { kind: "exists", collection, rkey };
  }
  if (write.swapCid !== undefined) {
    const current = yield* get<{ cid: string }>(sql`SELECT "cid" FROM "Record" WHERE "did" = ${did} AND "collection" = ${collection} AND "rkey" = ${rkey}`);
    // swapRecord null means "only if absent"; a CID means "only if that is the current version".
    if ((current?.cid ?? null) !== write.swapCid) return { kind: "swap-mismatch", collection, rkey };
  }
  if (write.action === "put") {
    yield* run(sql`INSERT INTO "Record" ("did", "collection", "rkey", "cid", "value", "createdAt", "updatedAt")
      VALUES (${did}, ${collection}, ${rkey}, ${write.cid}, ${JSON.stringify(write.value)}, ${at(now)}, ${at(now)})
      ON CONFLICT ("did", "collection", "rkey") DO UPDATE SET "cid" = excluded."cid", "value" = excluded."value", "updatedAt" = excluded."updatedAt"`);
  } else if (write.action === "update") {
    // An update never creates: the reference PDS fails it ("Could not find a record with key").
    const updated = yield* run(sql`UPDATE "Record" SET "cid" = ${write.cid}, "value" = ${JSON.stringify(write.value)}, "updatedAt" = ${at(now)}
      WHERE "did" = ${did} AND "collection" = ${collection} AND "rkey" = ${rkey}`);
    if (updated !== 1) return { kind: "missing", collection, rkey };
  } else {
    yield* run(sql`DELETE FROM "Record" WHERE "did" = ${did} AND "collection" = ${collection} AND "rkey" = ${rkey}`);
  }
  return undefined;
}

class ConflictSignal extends Error {
  constructor(readonly conflict: WriteConflict) {
    super("write conflict");
  }
}
