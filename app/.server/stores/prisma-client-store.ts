import type { CachedClientDocument, ClientStore } from "../oauth/client/client-store.ts";
import type { PrismaClient } from "../generated/prisma/client.ts";
import { deleteExpiredSql } from "./expired-rows.ts";

export class PrismaClientStore implements ClientStore {
  constructor(private readonly prisma: PrismaClient) {}

  async findFresh(clientId: string, now: number): Promise<CachedClientDocument | undefined> {
    const row = await this.prisma.client.findUnique({ where: { clientId } });
    if (!row) return undefined;
    if (row.expiresAt.getTime() <= now) {
      await this.prisma.client.deleteMany({ where: { clientId, expiresAt: { lte: new Date(now) } } });
      return undefined;
    }
    return JSON.parse(row.metadata) as CachedClientDocument;
  }

  async save(clientId: string, entry: CachedClientDocument, fetchedAt: number, expiresAt: number): Promise<void> {
    // Documents of clients that are never seen again expire here, a few at a time (DESIGN 4.4).
    await this.prisma.$executeRawUnsafe(deleteExpiredSql("Client", "clientId"), fetchedAt);
    const data = { metadata: JSON.stringify(entry), fetchedAt: new Date(fetchedAt), expiresAt: new Date(expiresAt) };
    await this.prisma.client.upsert({ where: { clientId }, create: { clientId, ...data }, update: data });
  }
}
