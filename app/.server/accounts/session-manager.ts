import type { PrismaClient } from "../generated/prisma/client.ts";
import { deleteExpiredSql } from "../stores/expired-rows.ts";
import { randomToken, sha256Base64url } from "../util/crypto.ts";
import { MINUTE } from "../util/time.ts";
import type { AccountSummary } from "./account-manager.ts";
import { isRecentAuthentication } from "./recent-authentication.ts";

export type BrowserSession = {
  account: AccountSummary;
  idHash: string;
  createdAt: Date;
  /** When this browser last proved the password or a passkey (null: not since the column exists). */
  authenticatedAt: Date | null;
  /** Whether that was recent enough to add a passkey or secure the account (docs/decisions/0007). */
  recentlyAuthenticated: boolean;
};

/**
 * Server-side browser sessions (docs/architecture.md, "Browser security"): the cookie holds a random id,
 * the database only its hash. Expired sessions are deleted when read, and a
 * few at each sign-in (browsers that never come back).
 */
export class SessionManager {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly lifetimeMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** A session for a browser that has just signed in (password or passkey): it starts recently authenticated. */
  async create(accountDid: string, meta: { userAgent?: string; ipAddress?: string }): Promise<string> {
    const id = randomToken("ses");
    const now = this.now();
    await this.prisma.$executeRawUnsafe(deleteExpiredSql("BrowserSession", "idHash"), now);
    await this.prisma.browserSession.create({
      data: {
        idHash: sha256Base64url(id),
        accountDid,
        userAgent: meta.userAgent?.slice(0, 512),
        ipAddress: meta.ipAddress?.slice(0, 64),
        createdAt: new Date(now),
        lastSeenAt: new Date(now),
        expiresAt: new Date(now + this.lifetimeMs),
        authenticatedAt: new Date(now),
      },
    });
    return id;
  }

  async resolve(id: string | undefined): Promise<BrowserSession | undefined> {
    if (!id || id.length > 128) return undefined;
    const idHash = sha256Base64url(id);
    const row = await this.prisma.browserSession.findUnique({ where: { idHash }, include: { account: true } });
    if (!row) return undefined;
    const now = this.now();
    if (row.expiresAt.getTime() <= now) {
      await this.prisma.browserSession.deleteMany({ where: { idHash } });
      return undefined;
    }
    // Record activity at most once a minute: keeps reads cheap.
    if (now - row.lastSeenAt.getTime() > MINUTE) {
      await this.prisma.browserSession.update({ where: { idHash }, data: { lastSeenAt: new Date(now) } });
    }
    const { did, handle, email, createdAt } = row.account;
    return {
      idHash,
      createdAt: row.createdAt,
      authenticatedAt: row.authenticatedAt,
      recentlyAuthenticated: isRecentAuthentication(row.authenticatedAt, now),
      account: { did, handle, email, createdAt },
    };
  }

  /** This browser has just proved the account's password or one of its passkeys again. */
  async markAuthenticated(idHash: string): Promise<void> {
    await this.prisma.browserSession.updateMany({ where: { idHash }, data: { authenticatedAt: new Date(this.now()) } });
  }

  async list(accountDid: string): Promise<{ idHash: string; userAgent: string | null; ipAddress: string | null; createdAt: Date; lastSeenAt: Date }[]> {
    return this.prisma.browserSession.findMany({
      where: { accountDid, expiresAt: { gt: new Date(this.now()) } },
      orderBy: { lastSeenAt: "desc" },
      select: { idHash: true, userAgent: true, ipAddress: true, createdAt: true, lastSeenAt: true },
    });
  }

  /** Signs out one of the account's browsers. */
  async destroyByHash(accountDid: string, idHash: string): Promise<void> {
    await this.prisma.browserSession.deleteMany({ where: { accountDid, idHash } });
  }

  /** Signs out every browser of the account except the current one. */
  async destroyOthers(accountDid: string, currentIdHash: string): Promise<number> {
    const { count } = await this.prisma.browserSession.deleteMany({ where: { accountDid, idHash: { not: currentIdHash } } });
    return count;
  }

  async destroy(id: string | undefined): Promise<void> {
    if (!id) return;
    await this.prisma.browserSession.deleteMany({ where: { idHash: sha256Base64url(id) } });
  }
}
