import type { GrantStore } from "../oauth/token/grant-store.ts";
import type { RememberedConsent } from "../oauth/authorize/prompt-rules.ts";
import type { ConsentStore } from "./consent-store.ts";

export type ConnectedApp = {
  clientId: string;
  /** Everything this account has allowed the app (union of its grants). */
  scope: string;
  /** The optional values the person declined (the email permission), not in `scope`. */
  declined: string[];
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

  /** Adds `scope` to what this account has allowed the client, and records the optional values it declined (docs/decisions/0032). */
  async remember(accountDid: string, clientId: string, scope: string, declined: readonly string[] = []): Promise<void> {
    await this.consents.remember(accountDid, clientId, { granted: scopeValues(scope), declined }, this.now());
  }

  /**
   * What the account answered this client, measured against `scope`: never (or not since it disconnected the app),
   * less than `scope`, or all of it — each value allowed, or declined before (oauth/authorize/prompt-rules.ts) — with
   * the values of `scope` it declined.
   */
  async consentFor(accountDid: string, clientId: string, scope: string): Promise<RememberedConsent> {
    const existing = await this.consents.find(accountDid, clientId);
    if (!existing) return { status: "never", declined: [] };
    const granted = new Set(scopeValues(existing.scope));
    const declinedBefore = new Set(scopeValues(existing.declined));
    const asked = scopeValues(scope);
    const declined = asked.filter((value) => declinedBefore.has(value));
    const answered = asked.every((value) => granted.has(value) || declinedBefore.has(value));
    return { status: answered ? "covers" : "narrower", declined };
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
        declined: scopeValues(app.declined),
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
