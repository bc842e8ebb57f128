import { tables } from "../db/rows.generated.ts";
import { at, get, lock, run, sql, type Database, type Program } from "../db/sql.ts";
import type { CachedClient, ClientStore } from "../oauth/client/client-store.ts";
import { expiredRowsCleanup } from "./expired-rows.ts";

export type ClientCacheBounds = {
  /** Most cached clients kept... */
  maxEntries: number;
  /** ...and most bytes of cached metadata in all; beyond either, the oldest entries go first. */
  maxBytes: number;
};

/** An entry larger than this is not cached at all: validation bounds every field, so this is only a last guard. */
const MAX_ENTRY_BYTES = 64 * 1024;

const cleanupClients = expiredRowsCleanup("Client", "clientId");

/** The client metadata cache (docs/decisions/0011), bounded in entries and in bytes. */
export class SqlClientStore implements ClientStore {
  constructor(
    private readonly db: Database,
    private readonly bounds: ClientCacheBounds,
  ) {}

  async findFresh(clientId: string, now: number): Promise<CachedClient | undefined> {
    const metadata = await this.db.execute(function* (): Program<string | undefined> {
      const row = yield* get(tables.Client.pick("metadata", "expiresAt"), sql`SELECT "metadata", "expiresAt" FROM "Client" WHERE "clientId" = ${clientId}`);
      if (!row) return undefined;
      if (row.expiresAt <= now) {
        yield* run(sql`DELETE FROM "Client" WHERE "clientId" = ${clientId} AND "expiresAt" <= ${at(now)}`);
        return undefined;
      }
      return row.metadata;
    });
    return metadata === undefined ? undefined : (JSON.parse(metadata) as CachedClient);
  }

  async save(clientId: string, entry: CachedClient, fetchedAt: number, expiresAt: number): Promise<void> {
    const metadata = JSON.stringify(entry);
    const size = Buffer.byteLength(metadata);
    if (size > MAX_ENTRY_BYTES) return;
    const { maxEntries, maxBytes } = this.bounds;
    await this.db.transaction(function* (): Program<void> {
      // The eviction counts the rows it sees: two saves at once on PostgreSQL would each miss the other's new row
      // and together leave the cache over its bounds. Saves are rare (a fetch of a client's metadata); they take
      // turns, as BEGIN IMMEDIATE makes them on SQLite.
      yield* lock("client-cache");
      // Documents of clients that are never seen again expire here, a few at a time (lazy expiry).
      yield* run(cleanupClients(fetchedAt));
      yield* run(sql`INSERT INTO "Client" ("clientId", "metadata", "size", "fetchedAt", "expiresAt")
        VALUES (${clientId}, ${metadata}, ${size}, ${at(fetchedAt)}, ${at(expiresAt)})
        ON CONFLICT ("clientId") DO UPDATE SET "metadata" = excluded."metadata", "size" = excluded."size",
          "fetchedAt" = excluded."fetchedAt", "expiresAt" = excluded."expiresAt"`);
      // Entries beyond the newest `maxEntries`, or beyond `maxBytes` counted from the newest: one statement.
      yield* run(sql`DELETE FROM "Client" WHERE "clientId" IN (
        SELECT "clientId" FROM (
          SELECT "clientId",
                 ROW_NUMBER() OVER (ORDER BY "fetchedAt" DESC, "clientId") AS "position",
                 SUM("size") OVER (ORDER BY "fetchedAt" DESC, "clientId" ROWS UNBOUNDED PRECEDING) AS "bytes"
          FROM "Client"
        ) AS ranked WHERE "position" > ${maxEntries} OR "bytes" > ${maxBytes}
      )`);
    });
  }
}
