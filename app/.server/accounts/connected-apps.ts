import type { PrismaClient } from "../generated/prisma/client.ts";
import type { GrantStore } from "../oauth/token/grant-store.ts";

export type ConnectedApp = {
  clientId: string;
  /** Everything this account has allowed the app (union of its grants). */
  scope: string;
  firstAuthorizedAt: Date;
  lastUsedAt: Date | null;
  activeGrants: number;
};

function scopeValues(scope: string): string[] {
  return scope.split(" ").filter(Boolean);
}

/**
 * What each account has allowed each app: remembered consent for the
 * consent screen, and the "connected apps" page where a person revokes them.
 */
export class ConnectedApps {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly grants: GrantStore,
    private readonly now: () => number = Date.now,
  ) {}

  /** Adds `scope` to what this account has allowed the client. */
  async remember(accountDid: string, clientId: string, scope: string): Promise<void> {
    const now = new Date(this.now());
    const existing = await this.prisma.authorizedClient.findUnique({ where: { accountDid_clientId: { accountDid, clientId } } });
    const union = [...new Set([...scopeValues(existing?.scope ?? ""), ...scopeValues(scope)])].join(" ");
    await this.prisma.authorizedClient.upsert({
      where: { accountDid_clientId: { accountDid, clientId } },
      create: { accountDid, clientId, scope: union, createdAt: now, updatedAt: now },
      update: { scope: union, updatedAt: now },
    });
  }

  /** True when the account already allowed this client every value of `scope` (or a broader set that contains them). */
  async covers(accountDid: string, clientId: string, scope: string): Promise<boolean> {
    const existing = await this.prisma.authorizedClient.findUnique({ where: { accountDid_clientId: { accountDid, clientId } } });
    if (!existing) return false;
    const granted = new Set(scopeValues(existing.scope));
    return scopeValues(scope).every((value) => granted.has(value));
  }

  async list(accountDid: string): Promise<ConnectedApp[]> {
    const remembered = await this.prisma.authorizedClient.findMany({ where: { accountDid }, orderBy: { updatedAt: "desc" } });
    const grants = this.grants.listGrants(accountDid, this.now());
    return remembered.map((app) => {
      const own = grants.filter((grant) => grant.clientId === app.clientId);
      const lastUsed = own.reduce((latest, grant) => Math.max(latest, grant.lastUsedAt), 0);
      return {
        clientId: app.clientId,
        scope: app.scope,
        firstAuthorizedAt: app.createdAt,
        lastUsedAt: lastUsed ? new Date(lastUsed) : null,
        activeGrants: own.length,
      };
    });
  }

  /** Ends every token the app holds for this account and forgets the consent. */
  async revoke(accountDid: string, clientId: string): Promise<boolean> {
    const ended = this.grants.revokeClientGrants(accountDid, clientId);
    const { count } = await this.prisma.authorizedClient.deleteMany({ where: { accountDid, clientId } });
    return ended > 0 || count > 0;
  }
}
