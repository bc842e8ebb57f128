/**
 * In-memory implementations of the OAuth core's store interfaces, for the
 * managers' unit tests: the same contracts as the SQL stores, proven by the
 * same suites (app/.server/stores/contracts/, run on these in
 * memory-stores.test.ts), on a clock the test controls. Single-threaded
 * JavaScript makes each method atomic, as each store method must be, as long
 * as a method does not await between its reads and its writes.
 */
import { mergedConsent, type ConsentAnswer, type ConsentStore, type StoredConsent } from "../../app/.server/accounts/consent-store.ts";
import { ClientManager } from "../../app/.server/oauth/client/client-manager.ts";
import { joinItems, type PermissionItem } from "../../app/.server/oauth/scopes/permission-items.ts";
import type { CachedClient, ClientStore } from "../../app/.server/oauth/client/client-store.ts";
import type { ReplayStore } from "../../app/.server/oauth/replay/replay-store.ts";
import type { Created, FoundRequest, PendingBound, RequestStore, ReturnAddress, Showing, StoredAuthorizationRequest } from "../../app/.server/oauth/request/request-store.ts";
import type {
  AccessTokenOwner,
  Grant,
  GrantStore,
  IssuedTokenHashes,
  NewAuthorizationCode,
  RotatedGrant,
  StoredAuthorizationCode,
  StoredRefreshToken,
} from "../../app/.server/oauth/token/grant-store.ts";
import type { ClientCacheBounds } from "../../app/.server/stores/sql-client-store.ts";

export class MemoryReplayStore implements ReplayStore {
  readonly rows = new Map<string, number>();
  constructor(private readonly now: () => number) {}

  async recordUnique(namespace: string, key: string, expiresAt: number): Promise<boolean> {
    const id = `${namespace}\u0000${key}`;
    const existing = this.rows.get(id);
    if (existing !== undefined && existing > this.now()) return false;
    this.rows.set(id, expiresAt);
    return true;
  }
}

type RequestRow = StoredAuthorizationRequest & {
  consumedAt: number | null;
  /** False once the request can no longer be answered (its parameters dropped). */
  full: boolean;
  wayBack: ReturnAddress | null;
  shownTo: string | null;
  pushedFrom: string | null;
  purgeAt: number;
};

export class MemoryRequestStore implements RequestStore {
  readonly rows = new Map<string, RequestRow>();

  /** `codes`: where an approved request's code goes (the grant store, as in the SQL stores). */
  constructor(
    private readonly codes?: MemoryGrantStore,
    private readonly retentionMs = 24 * 60 * 60 * 1000,
  ) {}

  async create(request: StoredAuthorizationRequest, bound?: PendingBound): Promise<Created> {
    if (this.rows.has(request.idHash)) throw new Error(`A request with the hash ${request.idHash} is stored already`);
    if (bound) {
      const pending = [...this.rows.values()].filter((row) => row.pushedFrom === bound.from && row.expiresAt > request.createdAt);
      if (pending.length >= bound.max) return { created: false, retryAt: Math.min(...pending.map((row) => row.expiresAt)) };
    }
    const row = { ...request, consumedAt: null, full: true, wayBack: null, shownTo: null, pushedFrom: bound?.from ?? null, purgeAt: request.expiresAt };
    this.rows.set(request.idHash, row);
    return { created: true };
  }

  async find(idHash: string, now: number): Promise<FoundRequest | undefined> {
    const row = this.rows.get(idHash);
    if (!row) return undefined;
    if (row.full && row.consumedAt === null && row.expiresAt > now) {
      const { consumedAt: _c, full: _f, wayBack: _w, shownTo: _s, pushedFrom: _p, purgeAt: _u, ...request } = row;
      return { status: "active", request };
    }
    if (!row.wayBack || (!row.full && row.purgeAt <= now)) {
      this.rows.delete(idHash);
      return undefined;
    }
    if (row.full) Object.assign(row, { full: false, pushedFrom: null, purgeAt: now + this.retentionMs });
    return { status: row.consumedAt === null ? "expired" : "answered", returnAddress: row.wayBack, shownTo: row.shownTo };
  }

  async show(idHash: string, showing: Showing): Promise<void> {
    const row = this.rows.get(idHash);
    if (!row || !row.full || row.consumedAt !== null || row.expiresAt <= showing.now) return;
    row.expiresAt = Math.max(row.expiresAt, showing.until);
    row.wayBack = showing.wayBack ?? null;
    row.shownTo = showing.browser ?? null;
    row.purgeAt = row.expiresAt;
  }

  async consume(idHash: string, now: number): Promise<boolean> {
    const row = this.answerable(idHash, now);
    if (!row) return false;
    this.markAnswered(row, now);
    return true;
  }

  /**
   * All or nothing, as the SQL store's transaction: the code is stored before the request is marked, with no await
   * between, so a code hash already taken throws and leaves the request unanswered, and no other call runs between.
   */
  async exchangeForCode(idHash: string, now: number, code: NewAuthorizationCode): Promise<boolean> {
    if (!this.codes) throw new Error("MemoryRequestStore was made without a grant store for codes");
    const row = this.answerable(idHash, now);
    if (!row) return false;
    this.codes.addCode(code);
    this.markAnswered(row, now);
    return true;
  }

  /** The request's row while it can still be answered. */
  private answerable(idHash: string, now: number): RequestRow | undefined {
    const row = this.rows.get(idHash);
    return row && row.full && row.consumedAt === null && row.expiresAt > now ? row : undefined;
  }

  private markAnswered(row: RequestRow, now: number): void {
    Object.assign(row, { consumedAt: now, full: false, pushedFrom: null, purgeAt: row.wayBack ? now + this.retentionMs : now });
  }
}

type AccessRow = { grantId: string; scope: string | null; expiresAt: number };
type RefreshRow = { grantId: string; expiresAt: number; usedAt: number | null };

export class MemoryGrantStore implements GrantStore {
  readonly codes = new Map<string, StoredAuthorizationCode>();
  readonly grants = new Map<string, Grant>();
  readonly access = new Map<string, AccessRow>();
  readonly refresh = new Map<string, RefreshRow>();
  /** The handle findAccessToken reports (the SQLite store joins the Account table). */
  handleOf: (did: string) => string = (did) => `handle-of-${did}`;

  async insertCode(code: NewAuthorizationCode): Promise<void> {
    this.addCode(code);
  }

  /** Stores a code at once; a hash already stored throws, as the table's primary key does. */
  addCode(code: NewAuthorizationCode): void {
    if (this.codes.has(code.codeHash)) throw new Error(`An authorization code with the hash ${code.codeHash} is stored already`);
    this.codes.set(code.codeHash, { ...code, usedAt: null, grantId: null });
  }

  async findCode(codeHash: string, now: number): Promise<StoredAuthorizationCode | undefined> {
    const code = this.codes.get(codeHash);
    if (code && code.expiresAt <= now) {
      this.codes.delete(codeHash);
      return undefined;
    }
    return code && { ...code };
  }

  async redeemCode(codeHash: string, now: number, grant: Grant, tokens: IssuedTokenHashes): Promise<boolean> {
    const code = this.codes.get(codeHash);
    if (!code || code.usedAt !== null || code.expiresAt <= now) return false;
    code.usedAt = now;
    code.grantId = grant.id;
    this.grants.set(grant.id, { ...grant });
    this.insertTokens(grant.id, tokens);
    return true;
  }

  async findRefreshToken(tokenHash: string, now: number): Promise<StoredRefreshToken | undefined> {
    const row = this.refresh.get(tokenHash);
    const grant = row && this.grants.get(row.grantId);
    if (!row || !grant) return undefined;
    if (grant.expiresAt <= now || grant.endsAt <= now) {
      this.removeGrant(grant.id);
      return undefined;
    }
    if (row.expiresAt <= now) {
      this.refresh.delete(tokenHash);
      return undefined;
    }
    return { tokenHash, expiresAt: row.expiresAt, usedAt: row.usedAt, grant: { ...grant } };
  }

  async rotateRefreshToken(tokenHash: string, grantId: string, now: number, tokens: IssuedTokenHashes): Promise<RotatedGrant | undefined> {
    const row = this.refresh.get(tokenHash);
    const grant = this.grants.get(grantId);
    if (!row || !grant || row.grantId !== grantId || row.usedAt !== null || row.expiresAt <= now) return undefined;
    row.usedAt = now;
    for (const [hash, access] of this.access) if (access.grantId === grantId) this.access.delete(hash);
    this.insertTokens(grantId, tokens);
    grant.lastUsedAt = now;
    grant.expiresAt = Math.min(tokens.refreshExpiresAt, grant.endsAt);
    return { withdrawn: grant.withdrawn };
  }

  async findAccessToken(tokenHash: string, now: number): Promise<AccessTokenOwner | undefined> {
    const row = this.access.get(tokenHash);
    const grant = row && this.grants.get(row.grantId);
    if (!row || !grant || row.expiresAt <= now || grant.expiresAt <= now || grant.endsAt <= now) return undefined;
    return { grant: { ...grant }, expiresAt: row.expiresAt, handle: this.handleOf(grant.accountDid), scope: row.scope ?? grant.scope, accountState: "active" };
  }

  async revokeGrant(grantId: string): Promise<void> {
    this.removeGrant(grantId);
  }

  /** Ends the grant and its tokens (as the foreign keys' cascade does), synchronously. */
  private removeGrant(grantId: string): void {
    this.grants.delete(grantId);
    for (const [hash, row] of this.access) if (row.grantId === grantId) this.access.delete(hash);
    for (const [hash, row] of this.refresh) if (row.grantId === grantId) this.refresh.delete(hash);
  }

  async listGrants(accountDid: string, now: number): Promise<Grant[]> {
    return [...this.grants.values()].filter((grant) => grant.accountDid === accountDid && grant.expiresAt > now).sort((a, b) => b.lastUsedAt - a.lastUsedAt);
  }

  async revokeClientGrants(accountDid: string, clientId: string): Promise<number> {
    return this.revokeWhere((subject) => subject.accountDid === accountDid && subject.clientId === clientId);
  }

  async revokeAccountGrants(accountDid: string): Promise<number> {
    return this.revokeWhere((subject) => subject.accountDid === accountDid);
  }

  async touchGrant(grantId: string, now: number): Promise<void> {
    const grant = this.grants.get(grantId);
    if (grant) grant.lastUsedAt = now;
  }

  async findGrantByTokenHash(tokenHash: string): Promise<Grant | undefined> {
    const grantId = this.access.get(tokenHash)?.grantId ?? this.refresh.get(tokenHash)?.grantId;
    const grant = grantId ? this.grants.get(grantId) : undefined;
    return grant && { ...grant };
  }

  /** What SqlConsentStore.withdraw does to the grants: each takes the items back, and the codes not yet redeemed end. */
  withdraw(accountDid: string, clientId: string, items: readonly PermissionItem[]): number {
    const own = [...this.grants.values()].filter((grant) => grant.accountDid === accountDid && grant.clientId === clientId);
    for (const grant of own) grant.withdrawn = joinItems(grant.withdrawn, items);
    for (const [hash, code] of this.codes) if (code.accountDid === accountDid && code.clientId === clientId && code.usedAt === null) this.codes.delete(hash);
    return own.length;
  }

  private insertTokens(grantId: string, tokens: IssuedTokenHashes): void {
    this.access.set(tokens.accessTokenHash, { grantId, scope: tokens.accessScope, expiresAt: tokens.accessExpiresAt });
    this.refresh.set(tokens.refreshTokenHash, { grantId, expiresAt: tokens.refreshExpiresAt, usedAt: null });
  }

  private revokeWhere(matches: (subject: { accountDid: string; clientId: string }) => boolean): number {
    for (const [hash, code] of this.codes) if (matches(code)) this.codes.delete(hash);
    const ended = [...this.grants.values()].filter(matches);
    for (const grant of ended) this.removeGrant(grant.id);
    return ended.length;
  }
}

/** An entry larger than this is not cached at all, as in SqlClientStore. */
const MAX_CACHED_CLIENT_BYTES = 64 * 1024;

type CachedClientRow = { metadata: string; size: number; fetchedAt: number; expiresAt: number };

/**
 * The client metadata cache, bounded as SqlClientStore is (docs/decisions/0011): entries round-trip through JSON as
 * they do through the Client table, and saving evicts the oldest fetched beyond either bound.
 */
export class MemoryClientStore implements ClientStore {
  readonly rows = new Map<string, CachedClientRow>();
  private readonly bounds: ClientCacheBounds;

  constructor(bounds: Partial<ClientCacheBounds> = {}) {
    this.bounds = { maxEntries: 100, maxBytes: 1_000_000, ...bounds };
  }

  async findFresh(clientId: string, now: number): Promise<CachedClient | undefined> {
    const row = this.rows.get(clientId);
    if (!row) return undefined;
    if (row.expiresAt <= now) {
      this.rows.delete(clientId);
      return undefined;
    }
    return JSON.parse(row.metadata) as CachedClient;
  }

  async save(clientId: string, entry: CachedClient, fetchedAt: number, expiresAt: number): Promise<void> {
    const metadata = JSON.stringify(entry);
    const size = Buffer.byteLength(metadata);
    if (size > MAX_CACHED_CLIENT_BYTES) return;
    this.rows.set(clientId, { metadata, size, fetchedAt, expiresAt });
    this.evictBeyondBounds();
  }

  /** Keeps the newest `maxEntries`, and of those the ones within `maxBytes` counted from the newest. */
  private evictBeyondBounds(): void {
    const newestFirst = [...this.rows].sort(([idA, a], [idB, b]) => b.fetchedAt - a.fetchedAt || (idA < idB ? -1 : idA > idB ? 1 : 0));
    let bytes = 0;
    newestFirst.forEach(([clientId, row], position) => {
      bytes += row.size;
      if (position >= this.bounds.maxEntries || bytes > this.bounds.maxBytes) this.rows.delete(clientId);
    });
  }
}

/**
 * A ClientManager for the managers' unit tests: client metadata cached in
 * memory (`store`, pre-filled by the test where it needs a confidential
 * client), assertion jtis in memory, on the test's clock.
 */
export function memoryClientManager(issuer: string, now: () => number, store: MemoryClientStore = new MemoryClientStore()): ClientManager {
  return new ClientManager(store, new MemoryReplayStore(now), {
    issuer,
    allowPrivate: false,
    cacheTtlMs: 10 * 60_000,
    assertionMaxAgeMs: 60_000,
    assertionMaxFutureMs: 10_000,
    now,
  });
}

/** Remembered consent; `forget` disconnects the app in `grants` too, as the SQL store does in one transaction. */
export class MemoryConsentStore implements ConsentStore {
  readonly rows = new Map<string, StoredConsent & { accountDid: string }>();

  constructor(private readonly grants?: MemoryGrantStore) {}

  async remember(accountDid: string, clientId: string, answer: ConsentAnswer, now: number): Promise<{ firstTime: boolean }> {
    const id = `${accountDid}\u0000${clientId}`;
    const existing = this.rows.get(id);
    this.rows.set(id, { accountDid, clientId, ...mergedConsent(existing, answer), createdAt: existing?.createdAt ?? now, updatedAt: now });
    return { firstTime: existing === undefined };
  }

  async find(accountDid: string, clientId: string): Promise<StoredConsent | undefined> {
    const row = this.rows.get(`${accountDid}\u0000${clientId}`);
    return row && { clientId: row.clientId, scope: row.scope, declined: row.declined, withdrawn: row.withdrawn, createdAt: row.createdAt, updatedAt: row.updatedAt };
  }

  async list(accountDid: string): Promise<StoredConsent[]> {
    const own = [...this.rows.values()].filter((row) => row.accountDid === accountDid);
    own.sort((a, b) => b.updatedAt - a.updatedAt || (a.clientId < b.clientId ? -1 : a.clientId > b.clientId ? 1 : 0));
    return own.map(({ accountDid: _accountDid, ...consent }) => consent);
  }

  async forget(accountDid: string, clientId: string): Promise<{ grants: number; consent: boolean }> {
    const grants = (await this.grants?.revokeClientGrants(accountDid, clientId)) ?? 0;
    return { grants, consent: this.rows.delete(`${accountDid}\u0000${clientId}`) };
  }

  async withdraw(accountDid: string, clientId: string, items: readonly PermissionItem[], now: number): Promise<{ grants: number } | undefined> {
    const row = this.rows.get(`${accountDid}\u0000${clientId}`);
    if (!row) return undefined;
    row.withdrawn = joinItems(row.withdrawn, items);
    row.updatedAt = now;
    return { grants: this.grants?.withdraw(accountDid, clientId, items) ?? 0 };
  }
}
