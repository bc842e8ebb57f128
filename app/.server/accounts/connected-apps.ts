import type { GrantStore } from "../oauth/token/grant-store.ts";
import type { RememberedConsent } from "../oauth/authorize/prompt-rules.ts";
import type { ConsentStore } from "./consent-store.ts";

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
    private readonly consents: ConsentStore,
    private readonly grants: GrantStore,
    private readonly now: () => number = Date.now,
  ) {}

  /** Adds `scope` to what this account has allowed the client. */
  async remember(accountDid: string, clientId: string, scope: string): Promise<void> {
    await this.consents.remember(accountDid, clientId, scopeValues(scope), this.now());
  }

  /** True when the account already allowed this client every value of `scope` (or a broader set that contains them). */
  async covers(accountDid: string, clientId: string, scope: string): Promise<boolean> {
    return (await this.consentFor(accountDid, clientId, scope)) === "covers";
  }

  /**
   * What the account allowed this client, measured against `scope`: never (or not since it disconnected the app),
   * less than `scope`, or all of it (oauth/authorize/prompt-rules.ts).
   */
  async consentFor(accountDid: string, clientId: string, scope: string): Promise<RememberedConsent> {
    const existing = await this.consents.find(accountDid, clientId);
    if (!existing) return "never";
    const granted = new Set(scopeValues(existing.scope));
    return scopeValues(scope).every((value) => granted.has(value)) ? "covers" : "narrower";
  }

  async list(accountDid: string): Promise<ConnectedApp[]> {
    const remembered = await this.consents.list(accountDid);
    const grants = await this.grants.listGrants(accountDid, this.now());
    return remembered.map((app) => {
      const own = grants.filter((grant) => grant.clientId === app.clientId);
      const lastUsed = own.reduce((latest, grant) => Math.max(latest, grant.lastUsedAt), 0);
      return {
        clientId: app.clientId,
        scope: app.scope,
        firstAuthorizedAt: new Date(app.createdAt),
        lastUsedAt: lastUsed ? new Date(lastUsed) : null,
        activeGrants: own.length,
      };
    });
  }

  /** Ends every token the app holds for this account and forgets the consent, in one step. */
  async revoke(accountDid: string, clientId: string): Promise<boolean> {
    const { grants, consent } = await this.consents.forget(accountDid, clientId);
    return grants > 0 || consent;
  }
}
