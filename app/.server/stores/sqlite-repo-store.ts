import type Database from "better-sqlite3";
import { blobCidsIn } from "../repo/blob-refs.ts";
import type { RecordWrite, RepoStore, StoredRecord, WriteConflict } from "../repo/repo-store.ts";
import type { SqliteBlobStore } from "./sqlite-blob-store.ts";

type RecordRow = { collection: string; rkey: string; cid: string; value: string; createdAt: number; updatedAt: number };

function toRecord(row: RecordRow): StoredRecord {
  return { ...row, value: JSON.parse(row.value) as unknown };
}

/**
 * Records and preferences on the synchronous connection: applyWrites is all-or-nothing (docs/decisions/0002), blob
 * references included (docs/decisions/0008).
 */
export class SqliteRepoStore implements RepoStore {
  private readonly s;
  private readonly writeTx;

  /** `blobs` must be on the same connection: record writes update its references inside their transaction. */
  constructor(
    db: Database.Database,
    private readonly blobs: SqliteBlobStore,
  ) {
    this.s = {
      get: db.prepare(`SELECT collection, rkey, cid, value, createdAt, updatedAt FROM "Record" WHERE did = ? AND collection = ? AND rkey = ?`),
      listDesc: db.prepare(
        `SELECT collection, rkey, cid, value, createdAt, updatedAt FROM "Record" WHERE did = ? AND collection = ? AND rkey < ? ORDER BY rkey DESC LIMIT ?`,
      ),
      listAsc: db.prepare(
        `SELECT collection, rkey, cid, value, createdAt, updatedAt FROM "Record" WHERE did = ? AND collection = ? AND rkey > ? ORDER BY rkey ASC LIMIT ?`,
      ),
      insert: db.prepare(
        `INSERT INTO "Record" (did, collection, rkey, cid, value, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      ),
      update: db.prepare(`UPDATE "Record" SET cid = ?, value = ?, updatedAt = ? WHERE did = ? AND collection = ? AND rkey = ?`),
      upsert: db.prepare(
        `INSERT INTO "Record" (did, collection, rkey, cid, value, createdAt, updatedAt) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(did, collection, rkey) DO UPDATE SET cid = excluded.cid, value = excluded.value, updatedAt = excluded.updatedAt`,
      ),
      delete: db.prepare(`DELETE FROM "Record" WHERE did = ? AND collection = ? AND rkey = ?`),
      getPreferences: db.prepare(`SELECT value FROM "Preferences" WHERE did = ?`),
      putPreferences: db.prepare(
        `INSERT INTO "Preferences" (did, value, updatedAt) VALUES (?, ?, ?) ON CONFLICT(did) DO UPDATE SET value = excluded.value, updatedAt = excluded.updatedAt`,
      ),
    };
    this.writeTx = db.transaction((did: string, writes: RecordWrite[], blobCids: string[][], now: number): WriteConflict | undefined => {
      for (const [index, write] of writes.entries()) {
        // docs/decisions/0008: a record's blob references change with the record, in the same transaction.
        // A create claims a free key, and a record's references go with it when it is deleted: none to read.
        const previousBlobCids = write.action === "create" ? [] : this.blobs.referencesOf(did, write.collection, write.rkey);
        const conflict = this.applyOne(did, write, now);
        if (conflict) throw new ConflictSignal(conflict);
        this.blobs.recordWritten(did, write.collection, write.rkey, previousBlobCids, blobCids[index]!, now);
      }
      this.blobs.removeExpired(now);
      return undefined;
    });
  }

  private applyOne(did: string, write: RecordWrite, now: number): WriteConflict | undefined {
    const { collection, rkey } = write;
    if (write.action === "create") {
      const inserted = this.s.insert.run(did, collection, rkey, write.cid, JSON.stringify(write.value), now, now).changes === 1;
      return inserted ? undefined : { kind: "exists", collection, rkey };
    }
    if (write.swapCid !== undefined) {
      const current = this.s.get.get(did, collection, rkey) as RecordRow | undefined;
      // swapRecord null means "only if absent"; a CID means "only if that is the current version".
      if ((current?.cid ?? null) !== write.swapCid) return { kind: "swap-mismatch", collection, rkey };
    }
    if (write.action === "put") {
      this.s.upsert.run(did, collection, rkey, write.cid, JSON.stringify(write.value), now, now);
    } else if (write.action === "update") {
      // An update never creates: the reference PDS fails it ("Could not find a record with key").
      const updated = this.s.update.run(write.cid, JSON.stringify(write.value), now, did, collection, rkey).changes === 1;
      if (!updated) return { kind: "missing", collection, rkey };
    } else {
      this.s.delete.run(did, collection, rkey);
    }
    return undefined;
  }

  getRecord(did: string, collection: string, rkey: string): StoredRecord | undefined {
    const row = this.s.get.get(did, collection, rkey) as RecordRow | undefined;
    return row ? toRecord(row) : undefined;
  }

  listRecords(did: string, collection: string, options: { limit: number; cursor?: string; reverse: boolean }): StoredRecord[] {
    const rows = options.reverse
      ? this.s.listAsc.all(did, collection, options.cursor ?? "", options.limit)
      : this.s.listDesc.all(did, collection, options.cursor ?? "\uffff", options.limit);
    return (rows as RecordRow[]).map(toRecord);
  }

  applyWrites(did: string, writes: RecordWrite[], now: number): WriteConflict | undefined {
    // Walked before the transaction: the write lock is not held while records are searched for blob refs.
    const blobCids = writes.map((write) => ("value" in write ? blobCidsIn(write.value) : []));
    try {
      return this.writeTx.immediate(did, writes, blobCids, now);
    } catch (error) {
      // Throwing inside the transaction rolled every write back.
      if (error instanceof ConflictSignal) return error.conflict;
      throw error;
    }
  }

  getPreferences(did: string): unknown[] {
    const row = this.s.getPreferences.get(did) as { value: string } | undefined;
    return row ? (JSON.parse(row.value) as unknown[]) : [];
  }

  putPreferences(did: string, preferences: unknown[], now: number): void {
    this.s.putPreferences.run(did, JSON.stringify(preferences), now);
  }
}

class ConflictSignal extends Error {
  constructor(readonly conflict: WriteConflict) {
    super("write conflict");
  }
}
