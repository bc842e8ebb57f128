import type { GrantStore } from "../oauth/token/grant-store.ts";
import type { RememberedConsent } from "../oauth/authorize/prompt-rules.ts";
import { formatItem, itemCovers, overlapOf, parseItem, parseItems, valueOverlaps, type PermissionItem } from "../oauth/scopes/permission-items.ts";
import type { ConsentStore } from "./consent-store.ts";

export type ConnectedApp = {
  clientId: string;
  /** Everything this account has allowed the app (union of its grants). */
  scope: string;
  /** The optional values the person declined (the email permission), not in `scope`. */
  declined: string[];
  /** What the person took back from it since (docs/decisions/0053). */
  withdrawn: PermissionItem[];
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

  /**
   * Adds `scope` to what this account has allowed the client, and records the optional values it declined
   * (docs/decisions/0032); `firstTime`: the app had nothing allowed before, a new app (docs/decisions/0053).
   */
  async remember(accountDid: string, clientId: string, scope: string, declined: readonly string[] = []): Promise<{ firstTime: boolean }> {
    return this.consents.remember(accountDid, clientId, { granted: scopeValues(scope), declined }, this.now());
  }

  /**
   * What the account answered this client, measured against `scope`: never (or not since it disconnected the app),
   * less than `scope`, or all of it — each value allowed and nothing of it taken back since, or declined before
   * (oauth/authorize/prompt-rules.ts) — with the values of `scope` it declined, and what the screen asks again: the
   * values never allowed, and of those allowed, the parts taken back since (docs/decisions/0053).
   */
  async consentFor(accountDid: string, clientId: string, scope: string): Promise<RememberedConsent> {
    const existing = await this.consents.find(accountDid, clientId);
    if (!existing) return { status: "never", declined: [], askedAgain: [] };
    const granted = new Set(scopeValues(existing.scope));
    const declinedBefore = new Set(scopeValues(existing.declined));
    const withdrawn = parseItems(existing.withdrawn);
    const asked = scopeValues(scope);
    const declined = asked.filter((value) => declinedBefore.has(value));
    const askedAgain = new Set<string>();
    for (const value of asked) {
      if (declinedBefore.has(value)) continue;
      if (!granted.has(value)) {
        askedAgain.add(value);
        continue;
      }
      for (const item of withdrawn) {
        const overlap = overlapOf(item, value);
        if (overlap) askedAgain.add(formatItem(overlap));
      }
    }
    return { status: askedAgain.size === 0 ? "covers" : "narrower", declined, askedAgain: [...askedAgain] };
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
        withdrawn: parseItems(app.withdrawn),
        firstAuthorizedAt: new Date(app.createdAt),
        lastUsedAt: lastUsed ? new Date(lastUsed) : null,
        activeGrants: own.length,
      };
    });
  }

  /** The one app, as the list has it; undefined when the account has not allowed it anything (or disconnected it). */
  async find(accountDid: string, clientId: string): Promise<ConnectedApp | undefined> {
    return (await this.list(accountDid)).find((app) => app.clientId === clientId);
  }

  /**
   * Takes one permission back from the app (docs/decisions/0053): its tokens are refused it from their next call, its
   * next refresh's scope leaves it out, and asking for it again shows the consent screen with just it. `item` is the
   * text the app's page sent (oauth/scopes/permission-items.ts). Refused when it is not a permission, the app is not
   * connected, or nothing the app was allowed reaches it; `unchanged` when it was taken back already.
   */
  async takeBack(accountDid: string, clientId: string, text: string): Promise<"taken-back" | "unchanged" | "not-connected" | "not-granted"> {
    const item = parseItem(text);
    const existing = await this.consents.find(accountDid, clientId);
    if (!existing) return "not-connected";
    if (!item || !scopeValues(existing.scope).some((value) => valueOverlaps(value, item))) return "not-granted";
    if (parseItems(existing.withdrawn).some((taken) => itemCovers(taken, item))) return "unchanged";
    const narrowed = await this.consents.withdraw(accountDid, clientId, [item], this.now());
    return narrowed ? "taken-back" : "not-connected";
  }

  /** Ends every token the app holds for this account and forgets the consent, in one step. */
  async revoke(accountDid: string, clientId: string): Promise<boolean> {
    const { grants, consent } = await this.consents.forget(accountDid, clientId);
    return grants > 0 || consent;
  }
}
