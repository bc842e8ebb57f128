import type { CachedClient, ClientStore } from "../oauth/client/client-store.ts";
import type { PrismaClient } from "../generated/prisma/client.ts";
import { deleteExpiredSql } from "./expired-rows.ts";

export type ClientCacheBounds = {
  /** Most cached clients kept... */
  maxEntries: number;
  /** ...and most bytes of cached metadata in all; beyond either, the oldest entries go first. */
  maxBytes: number;
};

/** An entry larger than this is not cached at all: validation bounds every field, so this is only a last guard. */
const MAX_ENTRY_BYTES = 64 * 1024;

/**
 * Entries beyond the newest `maxEntries`, or beyond `maxBytes` counted from
 * the newest: deleted in one statement (window functions run in SQLite ≥
 * 3.25 and PostgreSQL alike).
 */
const EVICT_SQL = `DELETE FROM "Client" WHERE "clientId" IN (
  SELECT "clientId" FROM (
    SELECT "clientId",
           ROW_NUMBER() OVER (ORDER BY "fetchedAt" DESC, "clientId") AS position,
           SUM("size") OVER (ORDER BY "fetchedAt" DESC, "clientId" ROWS UNBOUNDED PRECEDING) AS bytes
    FROM "Client"
  ) AS ranked WHERE position > ? OR bytes > ?
)`;

export class PrismaClientStore implements ClientStore {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly bounds: ClientCacheBounds,
  ) {}

  async findFresh(clientId: string, now: number): Promise<CachedClient | undefined> {
    const row = await this.prisma.client.findUnique({ where: { clientId } });
    if (!row) return undefined;
    if (row.expiresAt.getTime() <= now) {
      await this.prisma.client.deleteMany({ where: { clientId, expiresAt: { lte: new Date(now) } } });
      return undefined;
    }
    return JSON.parse(row.metadata) as CachedClient;
  }

  async save(clientId: string, entry: CachedClient, fetchedAt: number, expiresAt: number): Promise<void> {
    const metadata = JSON.stringify(entry);
    const size = Buffer.byteLength(metadata);
    if (size > MAX_ENTRY_BYTES) return;
    // Documents of clients that are never seen again expire here, a few at a time (lazy expiry).
    await this.prisma.$executeRawUnsafe(deleteExpiredSql("Client", "clientId"), fetchedAt);
    const data = { metadata, size, fetchedAt: new Date(fetchedAt), expiresAt: new Date(expiresAt) };
    await this.prisma.client.upsert({ where: { clientId }, create: { clientId, ...data }, update: data });
    await this.prisma.$executeRawUnsafe(EVICT_SQL, this.bounds.maxEntries, this.bounds.maxBytes);
  }
}
