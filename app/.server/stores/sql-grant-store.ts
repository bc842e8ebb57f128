import { shape } from "../db/row-shape.ts";
import { tables, type GrantRow } from "../db/rows.generated.ts";
import { all, at, get, run, sql, type Database, type Program } from "../db/sql.ts";
import type {
  AccessTokenOwner,
  Grant,
  GrantStore,
  IssuedTokenHashes,
  NewAuthorizationCode,
  RotatedGrant,
  StoredAuthorizationCode,
  StoredRefreshToken,
} from "../oauth/token/grant-store.ts";
import { clientKeyColumns, clientKeyFromColumns } from "./client-key-columns.ts";
import { CLEANUP_BATCH, expiredRowsCleanup, STILL_EXPIRES_AT } from "./expired-rows.ts";
import { accountStateOf, accountTakenDown } from "../accounts/account-status.ts";
import { lockCredentials } from "./locks.ts";

/** A refresh token's columns beside its grant's (aliased one by one, so that the token's cannot shadow the grant's). */
const REFRESH_TOKEN_ROW = shape({ ...tables.Grant.columns, tokenHash: "string", tokenExpiresAt: "time", usedAt: "time?" });
/** How many rows a one-statement step changed (PostgreSQL, docs/decisions/0035). */
const COUNT_ROW = shape({ n: "integer" });
/** A rotation's answer on PostgreSQL: whether the token was spent, and its grant's taken-back permissions as the step saw them. */
const ROTATED_ROW = shape({ n: "integer", withdrawn: "string?" });
/** An access token's columns beside its grant's, the account's handle and whether it is deactivated. */
const ACCESS_TOKEN_ROW = shape({ ...tables.Grant.columns, tokenExpiresAt: "time", accessScope: "string?", handle: "string", deactivatedAt: "time?", takendownAt: "time?" });

function toGrant(row: GrantRow): Grant {
  const { id, clientId, accountDid, scope, dpopJkt, createdAt, lastUsedAt, expiresAt, endsAt, withdrawn } = row;
  return { id, clientId, accountDid, scope, dpopJkt, clientKey: clientKeyFromColumns(row), createdAt, lastUsedAt, expiresAt, endsAt, withdrawn };
}

const cleanupCodes = expiredRowsCleanup("AuthorizationCode", "codeHash");
const cleanupGrants = expiredRowsCleanup("Grant", "id");
const cleanupRefreshTokens = expiredRowsCleanup("RefreshToken", "tokenHash");

/**
 * Inserts an unredeemed code (and drops a few expired ones): a step of the request store's exchange too. Never for a
 * taken-down account (docs/decisions/0051): checked under the credentials lock the takedown takes, so a code is either
 * in before the takedown, which deletes it, or refused (AccountTakedown, and the caller's transaction with it).
 */
export function* insertCode(code: NewAuthorizationCode): Program<void> {
  yield* lockCredentials(code.accountDid);
  const account = yield* get(tables.Account.pick("takendownAt"), sql`SELECT "takendownAt" FROM "Account" WHERE "did" = ${code.accountDid}`);
  if (account && account.takendownAt !== null) throw accountTakenDown();
  yield* run(cleanupCodes(code.createdAt));
  const key = clientKeyColumns(code.clientKey);
  yield* run(sql`INSERT INTO "AuthorizationCode"
      ("codeHash", "clientId", "accountDid", "redirectUri", "scope", "codeChallenge", "dpopJkt", "clientKeyId", "clientKeyAlg", "clientKeyJkt", "createdAt", "expiresAt")
    VALUES (${code.codeHash}, ${code.clientId}, ${code.accountDid}, ${code.redirectUri}, ${code.scope}, ${code.codeChallenge}, ${code.dpopJkt},
      ${key.clientKeyId}, ${key.clientKeyAlg}, ${key.clientKeyJkt}, ${at(code.createdAt)}, ${at(code.expiresAt)})`);
}

/**
 * Ends every grant the account gave `clientId` (tokens follow by cascade) and its unredeemed codes, which would
 * otherwise become new grants; the number of grants ended. A step of the consent store's "forget this app" too.
 */
export function* revokeClientGrants(accountDid: string, clientId: string): Program<number> {
  yield* run(sql`DELETE FROM "AuthorizationCode" WHERE "accountDid" = ${accountDid} AND "clientId" = ${clientId}`);
  return yield* run(sql`DELETE FROM "Grant" WHERE "accountDid" = ${accountDid} AND "clientId" = ${clientId}`);
}

/** The same for every client of the account (the account lockdown's step). */
export function* revokeAccountGrants(accountDid: string): Program<number> {
  yield* run(sql`DELETE FROM "AuthorizationCode" WHERE "accountDid" = ${accountDid}`);
  return yield* run(sql`DELETE FROM "Grant" WHERE "accountDid" = ${accountDid}`);
}

function* insertTokens(grantId: string, now: number, tokens: IssuedTokenHashes): Program<void> {
  yield* run(cleanupRefreshTokens(now));
  yield* run(sql`INSERT INTO "AccessToken" ("tokenHash", "grantId", "scope", "createdAt", "expiresAt")
    VALUES (${tokens.accessTokenHash}, ${grantId}, ${tokens.accessScope}, ${at(now)}, ${at(tokens.accessExpiresAt)})`);
  yield* run(sql`INSERT INTO "RefreshToken" ("tokenHash", "grantId", "createdAt", "expiresAt")
    VALUES (${tokens.refreshTokenHash}, ${grantId}, ${at(now)}, ${at(tokens.refreshExpiresAt)})`);
}

/**
 * Codes, grants and tokens. Each single-use step is one transaction whose
 * conditional UPDATE decides who wins a race, on either engine
 * (docs/architecture.md, "Tokens and codes"; docs/decisions/0002, 0017).
 */
export class SqlGrantStore implements GrantStore {
  constructor(private readonly db: Database) {}

  async insertCode(code: NewAuthorizationCode) {
    return this.db.transaction(() => insertCode(code));
  }

  async findCode(codeHash: string, now: number) {
    return this.db.execute(function* (): Program<StoredAuthorizationCode | undefined> {
      const row = yield* get(tables.AuthorizationCode, sql`SELECT * FROM "AuthorizationCode" WHERE "codeHash" = ${codeHash}`);
      if (!row) return undefined;
      if (row.expiresAt <= now) {
        yield* run(sql`DELETE FROM "AuthorizationCode" WHERE "codeHash" = ${codeHash}`);
        return undefined;
      }
      const { clientKeyId: _kid, clientKeyAlg: _alg, clientKeyJkt: _jkt, ...code } = row;
      return { ...code, clientKey: clientKeyFromColumns(row) };
    });
  }

  async redeemCode(codeHash: string, now: number, grant: Grant, tokens: IssuedTokenHashes) {
    const key = clientKeyColumns(grant.clientKey);
    // The conditional UPDATE decides the race on either engine. PostgreSQL: the whole step is one statement, each
    // write reading the code's "used" row, so nothing is written unless the code was (docs/decisions/0035).
    const redeemed = await this.db.atomicStep({
      *postgresql(): Program<number> {
        const row = yield* get(COUNT_ROW, sql`WITH "used" AS (UPDATE "AuthorizationCode" SET "usedAt" = ${at(now)}, "grantId" = ${grant.id}
            WHERE "codeHash" = ${codeHash} AND "usedAt" IS NULL AND "expiresAt" > ${at(now)} RETURNING "codeHash"),
          "expiredGrants" AS (DELETE FROM "Grant" WHERE ${STILL_EXPIRES_AT} <= ${at(now)} AND "id" IN (SELECT "id" FROM "Grant" WHERE "expiresAt" <= ${at(now)} LIMIT ${CLEANUP_BATCH})
            AND EXISTS (SELECT 1 FROM "used")),
          "grant" AS (INSERT INTO "Grant"
              ("id", "clientId", "accountDid", "scope", "dpopJkt", "clientKeyId", "clientKeyAlg", "clientKeyJkt", "createdAt", "lastUsedAt", "expiresAt", "endsAt", "withdrawn")
            SELECT ${grant.id}, ${grant.clientId}, ${grant.accountDid}, ${grant.scope}, ${grant.dpopJkt}, ${key.clientKeyId}, ${key.clientKeyAlg},
              ${key.clientKeyJkt}, CAST(${at(grant.createdAt)} AS TIMESTAMP(3)), CAST(${at(grant.lastUsedAt)} AS TIMESTAMP(3)),
              CAST(${at(grant.expiresAt)} AS TIMESTAMP(3)), CAST(${at(grant.endsAt)} AS TIMESTAMP(3)), ${grant.withdrawn}
            FROM "used" RETURNING "id"),
          "expiredRefreshTokens" AS (DELETE FROM "RefreshToken" WHERE ${STILL_EXPIRES_AT} <= ${at(now)} AND "tokenHash" IN (SELECT "tokenHash" FROM "RefreshToken"
              WHERE "expiresAt" <= ${at(now)} LIMIT ${CLEANUP_BATCH}) AND EXISTS (SELECT 1 FROM "used")),
          "access" AS (INSERT INTO "AccessToken" ("tokenHash", "grantId", "scope", "createdAt", "expiresAt")
            SELECT ${tokens.accessTokenHash}, "id", ${tokens.accessScope}, CAST(${at(now)} AS TIMESTAMP(3)), CAST(${at(tokens.accessExpiresAt)} AS TIMESTAMP(3))
            FROM "grant"),
          "refresh" AS (INSERT INTO "RefreshToken" ("tokenHash", "grantId", "createdAt", "expiresAt")
            SELECT ${tokens.refreshTokenHash}, "id", CAST(${at(now)} AS TIMESTAMP(3)), CAST(${at(tokens.refreshExpiresAt)} AS TIMESTAMP(3))
            FROM "grant")
          SELECT COUNT(*) AS "n" FROM "used"`);
        return row?.n ?? 0;
      },
      *sqlite(): Program<number> {
        const used = yield* run(sql`UPDATE "AuthorizationCode" SET "usedAt" = ${at(now)}, "grantId" = ${grant.id}
          WHERE "codeHash" = ${codeHash} AND "usedAt" IS NULL AND "expiresAt" > ${at(now)}`);
        if (used !== 1) return 0;
        yield* run(cleanupGrants(now));
        yield* run(sql`INSERT INTO "Grant"
            ("id", "clientId", "accountDid", "scope", "dpopJkt", "clientKeyId", "clientKeyAlg", "clientKeyJkt", "createdAt", "lastUsedAt", "expiresAt", "endsAt", "withdrawn")
          VALUES (${grant.id}, ${grant.clientId}, ${grant.accountDid}, ${grant.scope}, ${grant.dpopJkt}, ${key.clientKeyId}, ${key.clientKeyAlg},
            ${key.clientKeyJkt}, ${at(grant.createdAt)}, ${at(grant.lastUsedAt)}, ${at(grant.expiresAt)}, ${at(grant.endsAt)}, ${grant.withdrawn})`);
        yield* insertTokens(grant.id, now, tokens);
        return 1;
      },
    });
    return redeemed === 1;
  }

  async findRefreshToken(tokenHash: string, now: number) {
    // The grant's columns are aliased one by one so that the token's cannot shadow them.
    return this.db.execute(function* (): Program<StoredRefreshToken | undefined> {
      const row = yield* get(REFRESH_TOKEN_ROW, sql`SELECT r."tokenHash" AS "tokenHash", r."expiresAt" AS "tokenExpiresAt", r."usedAt" AS "usedAt", 
          g."id" AS "id", g."clientId" AS "clientId", g."accountDid" AS "accountDid", g."scope" AS "scope", g."dpopJkt" AS "dpopJkt",
          g."clientKeyId" AS "clientKeyId", g."clientKeyAlg" AS "clientKeyAlg", g."clientKeyJkt" AS "clientKeyJkt",
          g."createdAt" AS "createdAt", g."lastUsedAt" AS "lastUsedAt", g."expiresAt" AS "expiresAt", g."endsAt" AS "endsAt",
          g."withdrawn" AS "withdrawn"
        FROM "RefreshToken" r JOIN "Grant" g ON g."id" = r."grantId" WHERE r."tokenHash" = ${tokenHash}`);
      if (!row) return undefined;
      if (row.expiresAt <= now || row.endsAt <= now) {
        // Still expired when deleted (docs/decisions/0040): a rotation by another process may extend the grant after the
        // read, and on PostgreSQL a DELETE that waited for it re-checks only this WHERE.
        yield* run(sql`DELETE FROM "Grant" WHERE "id" = ${row.id} AND ("expiresAt" <= ${at(now)} OR "endsAt" <= ${at(now)})`);
        return undefined;
      }
      if (row.tokenExpiresAt <= now) {
        yield* run(sql`DELETE FROM "RefreshToken" WHERE "tokenHash" = ${tokenHash}`);
        return undefined;
      }
      return { tokenHash: row.tokenHash, expiresAt: row.tokenExpiresAt, usedAt: row.usedAt, grant: toGrant(row) };
    });
  }

  async rotateRefreshToken(tokenHash: string, grantId: string, now: number, tokens: IssuedTokenHashes) {
    // The grant lives as long as its newest refresh token, but never past its absolute end.
    const until = at(tokens.refreshExpiresAt);
    // The conditional UPDATE decides the race on either engine. PostgreSQL: one statement, each write reading the
    // "spent" row, so nothing is written unless the token was spent here (docs/decisions/0035). The grant's row is
    // updated in the same step and its taken-back permissions read from that update: a narrowing that committed first
    // (it updates the same row) is what the answer names; one that waits for this step narrows the token at its next
    // call (docs/decisions/0053).
    return this.db.atomicStep({
      *postgresql(): Program<RotatedGrant | undefined> {
        const row = yield* get(ROTATED_ROW, sql`WITH "spent" AS (UPDATE "RefreshToken" SET "usedAt" = ${at(now)}
            WHERE "tokenHash" = ${tokenHash} AND "grantId" = ${grantId} AND "usedAt" IS NULL AND "expiresAt" > ${at(now)} RETURNING "grantId"),
          "ended" AS (DELETE FROM "AccessToken" WHERE "grantId" = (SELECT "grantId" FROM "spent")),
          "expired" AS (DELETE FROM "RefreshToken" WHERE ${STILL_EXPIRES_AT} <= ${at(now)} AND "tokenHash" IN (SELECT "tokenHash" FROM "RefreshToken"
              WHERE "expiresAt" <= ${at(now)} LIMIT ${CLEANUP_BATCH}) AND EXISTS (SELECT 1 FROM "spent")),
          "access" AS (INSERT INTO "AccessToken" ("tokenHash", "grantId", "scope", "createdAt", "expiresAt")
            SELECT ${tokens.accessTokenHash}, "grantId", ${tokens.accessScope}, CAST(${at(now)} AS TIMESTAMP(3)), CAST(${at(tokens.accessExpiresAt)} AS TIMESTAMP(3))
            FROM "spent"),
          "refresh" AS (INSERT INTO "RefreshToken" ("tokenHash", "grantId", "createdAt", "expiresAt")
            SELECT ${tokens.refreshTokenHash}, "grantId", CAST(${at(now)} AS TIMESTAMP(3)), CAST(${until} AS TIMESTAMP(3)) FROM "spent"),
          "extended" AS (UPDATE "Grant" SET "lastUsedAt" = ${at(now)}, "expiresAt" = CASE WHEN "endsAt" < ${until} THEN "endsAt" ELSE ${until} END
            WHERE "id" = (SELECT "grantId" FROM "spent") RETURNING "withdrawn")
          SELECT (SELECT COUNT(*) FROM "spent") AS "n", (SELECT "withdrawn" FROM "extended") AS "withdrawn"`);
        return row && row.n === 1 ? { withdrawn: row.withdrawn ?? "" } : undefined;
      },
      *sqlite(): Program<RotatedGrant | undefined> {
        const spent = yield* run(sql`UPDATE "RefreshToken" SET "usedAt" = ${at(now)}
          WHERE "tokenHash" = ${tokenHash} AND "grantId" = ${grantId} AND "usedAt" IS NULL AND "expiresAt" > ${at(now)}`);
        if (spent !== 1) return undefined;
        // One live access token per grant: a refresh ends the previous one.
        yield* run(sql`DELETE FROM "AccessToken" WHERE "grantId" = ${grantId}`);
        yield* insertTokens(grantId, now, tokens);
        yield* run(sql`UPDATE "Grant" SET "lastUsedAt" = ${at(now)}, "expiresAt" = CASE WHEN "endsAt" < ${until} THEN "endsAt" ELSE ${until} END
          WHERE "id" = ${grantId}`);
        const grant = yield* get(tables.Grant.pick("withdrawn"), sql`SELECT "withdrawn" FROM "Grant" WHERE "id" = ${grantId}`);
        return { withdrawn: grant?.withdrawn ?? "" };
      },
    });
  }

  async findAccessToken(tokenHash: string, now: number) {
    return this.db.execute(function* (): Program<AccessTokenOwner | undefined> {
      const row = yield* get(ACCESS_TOKEN_ROW, sql`SELECT a."expiresAt" AS "tokenExpiresAt", a."scope" AS "accessScope", 
          g."id" AS "id", g."clientId" AS "clientId", g."accountDid" AS "accountDid", g."scope" AS "scope", g."dpopJkt" AS "dpopJkt",
          g."clientKeyId" AS "clientKeyId", g."clientKeyAlg" AS "clientKeyAlg", g."clientKeyJkt" AS "clientKeyJkt",
          g."createdAt" AS "createdAt", g."lastUsedAt" AS "lastUsedAt", g."expiresAt" AS "expiresAt", g."endsAt" AS "endsAt", g."withdrawn" AS "withdrawn", acc."handle" AS "handle",
          acc."deactivatedAt" AS "deactivatedAt", acc."takendownAt" AS "takendownAt"
        FROM "AccessToken" a JOIN "Grant" g ON g."id" = a."grantId" JOIN "Account" acc ON acc."did" = g."accountDid"
        WHERE a."tokenHash" = ${tokenHash}`);
      if (!row) return undefined;
      // An expired access token is absent here but its row stays until the grant's next refresh or its end: a
      // client signing out revokes the access token it holds, often long after it expired, and that must still
      // end the grant.
      if (row.tokenExpiresAt <= now || row.expiresAt <= now || row.endsAt <= now) return undefined;
      const grant = toGrant(row);
      return { grant, expiresAt: row.tokenExpiresAt, handle: row.handle, scope: row.accessScope ?? grant.scope, accountState: accountStateOf(row) };
    });
  }

  async revokeGrant(grantId: string) {
    // Foreign keys cascade to the grant's access and refresh tokens.
    return this.db.execute(function* (): Program<void> {
      yield* run(sql`DELETE FROM "Grant" WHERE "id" = ${grantId}`);
    });
  }

  async listGrants(accountDid: string, now: number) {
    return this.db.execute(function* (): Program<Grant[]> {
      const rows = yield* all(tables.Grant, sql`SELECT * FROM "Grant" WHERE "accountDid" = ${accountDid} AND "expiresAt" > ${at(now)} ORDER BY "lastUsedAt" DESC`);
      return rows.map(toGrant);
    });
  }

  async revokeClientGrants(accountDid: string, clientId: string) {
    return this.db.transaction(() => revokeClientGrants(accountDid, clientId));
  }

  async revokeAccountGrants(accountDid: string) {
    return this.db.transaction(() => revokeAccountGrants(accountDid));
  }

  async touchGrant(grantId: string, now: number) {
    return this.db.execute(function* (): Program<void> {
      yield* run(sql`UPDATE "Grant" SET "lastUsedAt" = ${at(now)} WHERE "id" = ${grantId}`);
    });
  }

  async findGrantByTokenHash(tokenHash: string) {
    return this.db.execute(function* (): Program<Grant | undefined> {
      const row = yield* get(tables.Grant, sql`SELECT * FROM "Grant"
        WHERE "id" = (SELECT "grantId" FROM "AccessToken" WHERE "tokenHash" = ${tokenHash})
           OR "id" = (SELECT "grantId" FROM "RefreshToken" WHERE "tokenHash" = ${tokenHash})`);
      return row ? toGrant(row) : undefined;
    });
  }
}
