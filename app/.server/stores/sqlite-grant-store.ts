import type Database from "better-sqlite3";
import type {
  AccessTokenOwner,
  Grant,
  GrantStore,
  IssuedTokenHashes,
  NewAuthorizationCode,
  StoredAuthorizationCode,
  StoredRefreshToken,
} from "../oauth/token/grant-store.ts";
import { clientKeyColumns, clientKeyFromColumns, type ClientKeyColumns } from "./client-key-columns.ts";
import { deleteExpiredSql } from "./expired-rows.ts";

type GrantRow = ClientKeyColumns & Omit<Grant, "clientKey">;
type CodeRow = ClientKeyColumns & Omit<StoredAuthorizationCode, "clientKey">;

function toGrant(row: GrantRow): Grant {
  const { id, clientId, accountDid, scope, dpopJkt, createdAt, lastUsedAt, expiresAt, endsAt } = row;
  return { id, clientId, accountDid, scope, dpopJkt, clientKey: clientKeyFromColumns(row), createdAt, lastUsedAt, expiresAt, endsAt };
}

/** The grant columns, aliased so a join with a token table cannot shadow them. */
const GRANT_COLUMNS = `g.id AS id, g.clientId AS clientId, g.accountDid AS accountDid, g.scope AS scope, g.dpopJkt AS dpopJkt,
  g.clientKeyId AS clientKeyId, g.clientKeyAlg AS clientKeyAlg, g.clientKeyJkt AS clientKeyJkt,
  g.createdAt AS createdAt, g.lastUsedAt AS lastUsedAt, g.expiresAt AS expiresAt, g.endsAt AS endsAt`;

/**
 * Codes, grants and tokens on the synchronous SQLite connection: each
 * multi-row step runs in one better-sqlite3 transaction, and the conditional
 * UPDATE inside it decides who wins a race (docs/architecture.md, "Tokens and codes", docs/decisions/0002).
 */
export class SqliteGrantStore implements GrantStore {
  private readonly s;
  private readonly redeemTx;
  private readonly rotateTx;
  private readonly revokeAccountTx;
  private readonly revokeClientTx;

  constructor(private readonly db: Database.Database) {
    this.s = {
      insertCode: db.prepare(
        `INSERT INTO "AuthorizationCode" (codeHash, clientId, accountDid, redirectUri, scope, codeChallenge, dpopJkt, clientKeyId, clientKeyAlg, clientKeyJkt, createdAt, expiresAt, usedAt, grantId)
         VALUES (@codeHash, @clientId, @accountDid, @redirectUri, @scope, @codeChallenge, @dpopJkt, @clientKeyId, @clientKeyAlg, @clientKeyJkt, @createdAt, @expiresAt, NULL, NULL)`,
      ),
      cleanupCodes: db.prepare(deleteExpiredSql("AuthorizationCode", "codeHash")),
      findCode: db.prepare(`SELECT * FROM "AuthorizationCode" WHERE codeHash = ?`),
      deleteCode: db.prepare(`DELETE FROM "AuthorizationCode" WHERE codeHash = ?`),
      useCode: db.prepare(
        `UPDATE "AuthorizationCode" SET usedAt = ?, grantId = ? WHERE codeHash = ? AND usedAt IS NULL AND expiresAt > ?`,
      ),
      insertGrant: db.prepare(
        `INSERT INTO "Grant" (id, clientId, accountDid, scope, dpopJkt, clientKeyId, clientKeyAlg, clientKeyJkt, createdAt, lastUsedAt, expiresAt, endsAt)
         VALUES (@id, @clientId, @accountDid, @scope, @dpopJkt, @clientKeyId, @clientKeyAlg, @clientKeyJkt, @createdAt, @lastUsedAt, @expiresAt, @endsAt)`,
      ),
      cleanupGrants: db.prepare(deleteExpiredSql("Grant", "id")),
      // The grant lives as long as its newest refresh token, but never past its absolute end.
      touchGrant: db.prepare(`UPDATE "Grant" SET lastUsedAt = ?, expiresAt = MIN(?, endsAt) WHERE id = ?`),
      insertAccess: db.prepare(`INSERT INTO "AccessToken" (tokenHash, grantId, scope, createdAt, expiresAt) VALUES (?, ?, ?, ?, ?)`),
      deleteAccessOfGrant: db.prepare(`DELETE FROM "AccessToken" WHERE grantId = ?`),
      insertRefresh: db.prepare(
        `INSERT INTO "RefreshToken" (tokenHash, grantId, createdAt, expiresAt, usedAt) VALUES (?, ?, ?, ?, NULL)`,
      ),
      cleanupRefresh: db.prepare(deleteExpiredSql("RefreshToken", "tokenHash")),
      spendRefresh: db.prepare(
        `UPDATE "RefreshToken" SET usedAt = ? WHERE tokenHash = ? AND grantId = ? AND usedAt IS NULL AND expiresAt > ?`,
      ),
      findRefresh: db.prepare(
        `SELECT r.tokenHash AS tokenHash, r.expiresAt AS tokenExpiresAt, r.usedAt AS usedAt, ${GRANT_COLUMNS}
         FROM "RefreshToken" r JOIN "Grant" g ON g.id = r.grantId WHERE r.tokenHash = ?`,
      ),
      deleteRefresh: db.prepare(`DELETE FROM "RefreshToken" WHERE tokenHash = ?`),
      findAccess: db.prepare(
        `SELECT a.expiresAt AS tokenExpiresAt, a.scope AS accessScope, ${GRANT_COLUMNS}, acc.handle AS handle
         FROM "AccessToken" a JOIN "Grant" g ON g.id = a.grantId JOIN "Account" acc ON acc.did = g.accountDid
         WHERE a.tokenHash = ?`,
      ),
      deleteGrant: db.prepare(`DELETE FROM "Grant" WHERE id = ?`),
      listGrants: db.prepare(`SELECT * FROM "Grant" WHERE accountDid = ? AND expiresAt > ? ORDER BY lastUsedAt DESC`),
      revokeClient: db.prepare(`DELETE FROM "Grant" WHERE accountDid = ? AND clientId = ?`),
      deleteClientCodes: db.prepare(`DELETE FROM "AuthorizationCode" WHERE accountDid = ? AND clientId = ?`),
      revokeAccount: db.prepare(`DELETE FROM "Grant" WHERE accountDid = ?`),
      deleteAccountCodes: db.prepare(`DELETE FROM "AuthorizationCode" WHERE accountDid = ?`),
      markUsed: db.prepare(`UPDATE "Grant" SET lastUsedAt = ? WHERE id = ?`),
      grantOfToken: db.prepare(
        `SELECT * FROM "Grant" WHERE id = (SELECT grantId FROM "AccessToken" WHERE tokenHash = @hash)
            OR id = (SELECT grantId FROM "RefreshToken" WHERE tokenHash = @hash)`,
      ),
    };

    this.redeemTx = db.transaction((codeHash: string, now: number, grant: Grant, tokens: IssuedTokenHashes): boolean => {
      if (this.s.useCode.run(now, grant.id, codeHash, now).changes !== 1) return false;
      this.s.cleanupGrants.run(now);
      const { clientKey, ...columns } = grant;
      this.s.insertGrant.run({ ...columns, ...clientKeyColumns(clientKey) });
      this.insertTokens(grant.id, now, tokens);
      return true;
    });

    this.rotateTx = db.transaction((tokenHash: string, grantId: string, now: number, tokens: IssuedTokenHashes): boolean => {
      if (this.s.spendRefresh.run(now, tokenHash, grantId, now).changes !== 1) return false;
      // One live access token per grant: a refresh ends the previous one.
      this.s.deleteAccessOfGrant.run(grantId);
      this.insertTokens(grantId, now, tokens);
      this.s.touchGrant.run(now, tokens.refreshExpiresAt, grantId);
      return true;
    });

    // The account's unredeemed codes go too: redeemed afterwards, one would become a new grant.
    this.revokeAccountTx = db.transaction((accountDid: string): number => {
      this.s.deleteAccountCodes.run(accountDid);
      // Foreign keys cascade to each grant's access and refresh tokens.
      return this.s.revokeAccount.run(accountDid).changes;
    });
    this.revokeClientTx = db.transaction((accountDid: string, clientId: string): number => {
      this.s.deleteClientCodes.run(accountDid, clientId);
      return this.s.revokeClient.run(accountDid, clientId).changes;
    });
  }

  private insertTokens(grantId: string, now: number, tokens: IssuedTokenHashes): void {
    this.s.cleanupRefresh.run(now);
    this.s.insertAccess.run(tokens.accessTokenHash, grantId, tokens.accessScope, now, tokens.accessExpiresAt);
    this.s.insertRefresh.run(tokens.refreshTokenHash, grantId, now, tokens.refreshExpiresAt);
  }

  insertCode(code: NewAuthorizationCode): void {
    this.s.cleanupCodes.run(code.createdAt);
    const { clientKey, ...columns } = code;
    this.s.insertCode.run({ ...columns, ...clientKeyColumns(clientKey) });
  }

  findCode(codeHash: string, now: number): StoredAuthorizationCode | undefined {
    const row = this.s.findCode.get(codeHash) as CodeRow | undefined;
    if (!row) return undefined;
    if (row.expiresAt <= now) {
      this.s.deleteCode.run(codeHash);
      return undefined;
    }
    const { clientKeyId: _kid, clientKeyAlg: _alg, clientKeyJkt: _jkt, ...code } = row;
    return { ...code, clientKey: clientKeyFromColumns(row) };
  }

  redeemCode(codeHash: string, now: number, grant: Grant, tokens: IssuedTokenHashes): boolean {
    return this.redeemTx.immediate(codeHash, now, grant, tokens);
  }

  findRefreshToken(tokenHash: string, now: number): StoredRefreshToken | undefined {
    const row = this.s.findRefresh.get(tokenHash) as (GrantRow & { tokenHash: string; tokenExpiresAt: number; usedAt: number | null }) | undefined;
    if (!row) return undefined;
    if (row.expiresAt <= now || row.endsAt <= now) {
      this.s.deleteGrant.run(row.id);
      return undefined;
    }
    if (row.tokenExpiresAt <= now) {
      this.s.deleteRefresh.run(tokenHash);
      return undefined;
    }
    return { tokenHash: row.tokenHash, expiresAt: row.tokenExpiresAt, usedAt: row.usedAt, grant: toGrant(row) };
  }

  rotateRefreshToken(tokenHash: string, grantId: string, now: number, tokens: IssuedTokenHashes): boolean {
    return this.rotateTx.immediate(tokenHash, grantId, now, tokens);
  }

  findAccessToken(tokenHash: string, now: number): AccessTokenOwner | undefined {
    const row = this.s.findAccess.get(tokenHash) as (GrantRow & { tokenExpiresAt: number; accessScope: string | null; handle: string }) | undefined;
    if (!row) return undefined;
    // An expired access token is absent here but its row stays until the grant's next refresh or its end: a client
    // signing out revokes the access token it holds, often long after it expired, and that must still end the grant.
    if (row.tokenExpiresAt <= now || row.expiresAt <= now || row.endsAt <= now) return undefined;
    const grant = toGrant(row);
    return { grant, expiresAt: row.tokenExpiresAt, handle: row.handle, scope: row.accessScope ?? grant.scope };
  }

  revokeGrant(grantId: string): void {
    // Foreign keys cascade to the grant's access and refresh tokens.
    this.s.deleteGrant.run(grantId);
  }

  listGrants(accountDid: string, now: number): Grant[] {
    return (this.s.listGrants.all(accountDid, now) as GrantRow[]).map(toGrant);
  }

  revokeClientGrants(accountDid: string, clientId: string): number {
    return this.revokeClientTx.immediate(accountDid, clientId);
  }

  revokeAccountGrants(accountDid: string): number {
    return this.revokeAccountTx(accountDid);
  }

  touchGrant(grantId: string, now: number): void {
    this.s.markUsed.run(now, grantId);
  }

  findGrantByTokenHash(tokenHash: string): Grant | undefined {
    const row = this.s.grantOfToken.get({ hash: tokenHash }) as GrantRow | undefined;
    return row ? toGrant(row) : undefined;
  }
}
