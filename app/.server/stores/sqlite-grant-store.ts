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
import { deleteExpiredSql } from "./expired-rows.ts";

/**
 * Codes, grants and tokens on the synchronous SQLite connection: each
 * multi-row step runs in one better-sqlite3 transaction, and the conditional
 * UPDATE inside it decides who wins a race (DESIGN 4.1, docs/decisions/0002).
 */
export class SqliteGrantStore implements GrantStore {
  private readonly s;
  private readonly redeemTx;
  private readonly rotateTx;
  private readonly revokeAccountTx;

  constructor(private readonly db: Database.Database) {
    this.s = {
      insertCode: db.prepare(
        `INSERT INTO "AuthorizationCode" (codeHash, clientId, accountDid, redirectUri, scope, codeChallenge, dpopJkt, clientKeyId, createdAt, expiresAt, usedAt, grantId)
         VALUES (@codeHash, @clientId, @accountDid, @redirectUri, @scope, @codeChallenge, @dpopJkt, @clientKeyId, @createdAt, @expiresAt, NULL, NULL)`,
      ),
      cleanupCodes: db.prepare(
        deleteExpiredSql("AuthorizationCode", "codeHash"),
      ),
      findCode: db.prepare(`SELECT * FROM "AuthorizationCode" WHERE codeHash = ?`),
      deleteCode: db.prepare(`DELETE FROM "AuthorizationCode" WHERE codeHash = ?`),
      useCode: db.prepare(
        `UPDATE "AuthorizationCode" SET usedAt = ?, grantId = ? WHERE codeHash = ? AND usedAt IS NULL AND expiresAt > ?`,
      ),
      insertGrant: db.prepare(
        `INSERT INTO "Grant" (id, clientId, accountDid, scope, dpopJkt, clientKeyId, createdAt, lastUsedAt, expiresAt)
         VALUES (@id, @clientId, @accountDid, @scope, @dpopJkt, @clientKeyId, @createdAt, @lastUsedAt, @expiresAt)`,
      ),
      cleanupGrants: db.prepare(
        deleteExpiredSql("Grant", "id"),
      ),
      touchGrant: db.prepare(`UPDATE "Grant" SET lastUsedAt = ?, expiresAt = ? WHERE id = ?`),
      insertAccess: db.prepare(`INSERT INTO "AccessToken" (tokenHash, grantId, createdAt, expiresAt) VALUES (?, ?, ?, ?)`),
      cleanupAccess: db.prepare(
        deleteExpiredSql("AccessToken", "tokenHash"),
      ),
      deleteAccessOfGrant: db.prepare(`DELETE FROM "AccessToken" WHERE grantId = ?`),
      insertRefresh: db.prepare(
        `INSERT INTO "RefreshToken" (tokenHash, grantId, createdAt, expiresAt, usedAt) VALUES (?, ?, ?, ?, NULL)`,
      ),
      cleanupRefresh: db.prepare(
        deleteExpiredSql("RefreshToken", "tokenHash"),
      ),
      spendRefresh: db.prepare(
        `UPDATE "RefreshToken" SET usedAt = ? WHERE tokenHash = ? AND grantId = ? AND usedAt IS NULL AND expiresAt > ?`,
      ),
      findRefresh: db.prepare(
        `SELECT r.tokenHash AS tokenHash, r.expiresAt AS tokenExpiresAt, r.usedAt AS usedAt, g.*
         FROM "RefreshToken" r JOIN "Grant" g ON g.id = r.grantId WHERE r.tokenHash = ?`,
      ),
      deleteRefresh: db.prepare(`DELETE FROM "RefreshToken" WHERE tokenHash = ?`),
      findAccess: db.prepare(
        `SELECT a.expiresAt AS tokenExpiresAt, g.*, acc.handle AS handle
         FROM "AccessToken" a JOIN "Grant" g ON g.id = a.grantId JOIN "Account" acc ON acc.did = g.accountDid
         WHERE a.tokenHash = ?`,
      ),
      deleteAccess: db.prepare(`DELETE FROM "AccessToken" WHERE tokenHash = ?`),
      deleteGrant: db.prepare(`DELETE FROM "Grant" WHERE id = ?`),
      listGrants: db.prepare(`SELECT * FROM "Grant" WHERE accountDid = ? AND expiresAt > ? ORDER BY lastUsedAt DESC`),
      revokeClient: db.prepare(`DELETE FROM "Grant" WHERE accountDid = ? AND clientId = ?`),
      revokeAccount: db.prepare(`DELETE FROM "Grant" WHERE accountDid = ?`),
      deleteAccountCodes: db.prepare(`DELETE FROM "AuthorizationCode" WHERE accountDid = ?`),
      markUsed: db.prepare(`UPDATE "Grant" SET lastUsedAt = ? WHERE id = ?`),
      grantOfAccess: db.prepare(`SELECT grantId FROM "AccessToken" WHERE tokenHash = ?`),
      grantOfRefresh: db.prepare(`SELECT grantId FROM "RefreshToken" WHERE tokenHash = ?`),
    };

    this.redeemTx = db.transaction((codeHash: string, now: number, grant: Grant, tokens: IssuedTokenHashes): boolean => {
      if (this.s.useCode.run(now, grant.id, codeHash, now).changes !== 1) return false;
      this.s.cleanupGrants.run(now);
      this.s.insertGrant.run(grant);
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
  }

  private insertTokens(grantId: string, now: number, tokens: IssuedTokenHashes): void {
    this.s.cleanupAccess.run(now);
    this.s.cleanupRefresh.run(now);
    this.s.insertAccess.run(tokens.accessTokenHash, grantId, now, tokens.accessExpiresAt);
    this.s.insertRefresh.run(tokens.refreshTokenHash, grantId, now, tokens.refreshExpiresAt);
  }

  insertCode(code: NewAuthorizationCode): void {
    this.s.cleanupCodes.run(code.createdAt);
    this.s.insertCode.run(code);
  }

  findCode(codeHash: string, now: number): StoredAuthorizationCode | undefined {
    const row = this.s.findCode.get(codeHash) as StoredAuthorizationCode | undefined;
    if (row && row.expiresAt <= now) {
      this.s.deleteCode.run(codeHash);
      return undefined;
    }
    return row;
  }

  redeemCode(codeHash: string, now: number, grant: Grant, tokens: IssuedTokenHashes): boolean {
    return this.redeemTx.immediate(codeHash, now, grant, tokens);
  }

  findRefreshToken(tokenHash: string, now: number): StoredRefreshToken | undefined {
    const row = this.s.findRefresh.get(tokenHash) as (Grant & { tokenHash: string; tokenExpiresAt: number; usedAt: number | null }) | undefined;
    if (!row) return undefined;
    if (row.expiresAt <= now) {
      this.s.deleteGrant.run(row.id);
      return undefined;
    }
    if (row.tokenExpiresAt <= now) {
      this.s.deleteRefresh.run(tokenHash);
      return undefined;
    }
    const { tokenHash: hash, tokenExpiresAt, usedAt, ...grant } = row;
    return { tokenHash: hash, expiresAt: tokenExpiresAt, usedAt, grant };
  }

  rotateRefreshToken(tokenHash: string, grantId: string, now: number, tokens: IssuedTokenHashes): boolean {
    return this.rotateTx.immediate(tokenHash, grantId, now, tokens);
  }

  findAccessToken(tokenHash: string, now: number): AccessTokenOwner | undefined {
    const row = this.s.findAccess.get(tokenHash) as (Grant & { tokenExpiresAt: number; handle: string }) | undefined;
    if (!row) return undefined;
    if (row.tokenExpiresAt <= now || row.expiresAt <= now) {
      this.s.deleteAccess.run(tokenHash);
      return undefined;
    }
    const { tokenExpiresAt, handle, ...grant } = row;
    return { grant, expiresAt: tokenExpiresAt, handle };
  }

  revokeGrant(grantId: string): void {
    // Foreign keys cascade to the grant's access and refresh tokens.
    this.s.deleteGrant.run(grantId);
  }

  listGrants(accountDid: string, now: number): Grant[] {
    return this.s.listGrants.all(accountDid, now) as Grant[];
  }

  revokeClientGrants(accountDid: string, clientId: string): number {
    return this.s.revokeClient.run(accountDid, clientId).changes;
  }

  revokeAccountGrants(accountDid: string): number {
    return this.revokeAccountTx(accountDid);
  }

  touchGrant(grantId: string, now: number): void {
    this.s.markUsed.run(now, grantId);
  }

  revokeByTokenHash(tokenHash: string): boolean {
    const row = (this.s.grantOfAccess.get(tokenHash) ?? this.s.grantOfRefresh.get(tokenHash)) as { grantId: string } | undefined;
    if (!row) return false;
    this.revokeGrant(row.grantId);
    return true;
  }
}
