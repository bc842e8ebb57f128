import { shape } from "../db/row-shape.ts";
import { tables } from "../db/rows.generated.ts";
import { at, get, lock, run, sql, statementOf, type Database, type Program } from "../db/sql.ts";
import type { AuthorizationParameters, Created, FoundRequest, PendingBound, RequestStore, ReturnAddress, Showing, StoredAuthorizationRequest } from "../oauth/request/request-store.ts";
import type { NewAuthorizationCode } from "../oauth/token/grant-store.ts";
import { clientKeyColumns, clientKeyFromColumns } from "./client-key-columns.ts";
import { CLEANUP_BATCH, stillExpired, STILL_PURGE_AT } from "./expired-rows.ts";
import { insertCode } from "./sql-grant-store.ts";

/** How many requests of an address wait for an answer, and when the soonest of them expires (null: none). */
const PENDING_ROW = shape({ n: "integer", soonest: "time?" });
/** The pending count beside whether the push was stored (PostgreSQL's one statement). */
const PUSHED_ROW = shape({ n: "integer", soonest: "time?", created: "integer" });

/** The way back as stored: in the parameters' own names, the client_id being the row's. */
type StoredWayBack = Pick<AuthorizationParameters, "redirect_uri" | "state" | "response_mode">;

/*
 * "purgeAt" is when the lazy cleanup next acts on a row (docs/decisions/0022): its expiry while it can be answered;
 * once it keeps only its way back, `retention` after that began. Two statements of a batch each, both searching the
 * "purgeAt" index: the first shrinks expired requests whose screen was shown to their way back, the second deletes
 * every other row past its time. Each skips only the rows the other takes, so neither reads far.
 */
export const REQUEST_SQL = {
  /** Parameters: the time the way back is kept until, now, now (the outer test, as no index can serve it: expired-rows.ts, deleteExpiredSql). */
  shrinkExpiredShown: `UPDATE "AuthorizationRequest" SET "parameters" = NULL, "pushedFrom" = NULL, "purgeAt" = ?
    WHERE ${stillExpired("purgeAt")} <= ? AND "parameters" IS NOT NULL AND "wayBack" IS NOT NULL AND "idHash" IN (SELECT "idHash" FROM "AuthorizationRequest"
      WHERE "purgeAt" <= ? AND "parameters" IS NOT NULL AND "wayBack" IS NOT NULL LIMIT ${CLEANUP_BATCH})`,
  /** Parameters: now, now. */
  deletePastTheirTime: `DELETE FROM "AuthorizationRequest"
    WHERE ${stillExpired("purgeAt")} <= ? AND ("parameters" IS NULL OR "wayBack" IS NULL) AND "idHash" IN (SELECT "idHash" FROM "AuthorizationRequest"
      WHERE "purgeAt" <= ? AND ("parameters" IS NULL OR "wayBack" IS NULL) LIMIT ${CLEANUP_BATCH})`,
  /**
   * Parameters: the address's limit bucket, now, the bound. Reads at most the bound's worth of index entries, however
   * many the address has waiting.
   */
  pendingFrom: `SELECT COUNT(*) AS "n", MIN("expiresAt") AS "soonest" FROM (SELECT "expiresAt" FROM "AuthorizationRequest"
    WHERE "pushedFrom" = ? AND "expiresAt" > ? ORDER BY "expiresAt" LIMIT ?) AS "pending"`,
};

const shrinkExpiredShownStatement = statementOf(REQUEST_SQL.shrinkExpiredShown);
const deletePastTheirTimeStatement = statementOf(REQUEST_SQL.deletePastTheirTime);
const pendingFrom = statementOf(REQUEST_SQL.pendingFrom);

function shrinkExpiredShown(now: number, keptUntil: number) {
  return shrinkExpiredShownStatement(at(keptUntil), at(now), at(now));
}

function deletePastTheirTime(now: number) {
  return deletePastTheirTimeStatement(at(now), at(now));
}

/**
 * Marks the request used, if it can still be answered: 1 for the one caller that wins, 0 for every other. Its
 * parameters go in the same statement: what remains is the way back written when its screen was shown, kept until
 * `keptUntil`, or nothing (the cleanup may take the row at once: its creation is past).
 */
function consume(idHash: string, now: number, keptUntil: number) {
  return run(sql`UPDATE "AuthorizationRequest" SET "consumedAt" = ${at(now)}, "parameters" = NULL, "pushedFrom" = NULL,
      "purgeAt" = CASE WHEN "wayBack" IS NULL THEN "createdAt" ELSE ${at(keptUntil)} END
    WHERE "idHash" = ${idHash} AND "parameters" IS NOT NULL AND "consumedAt" IS NULL AND "expiresAt" > ${at(now)}`);
}

function storedWayBack(address: ReturnAddress): string {
  const stored: StoredWayBack = { redirect_uri: address.redirectUri, state: address.state, response_mode: address.responseMode };
  return JSON.stringify(stored);
}

function returnAddressOfRow(clientId: string, wayBack: string): ReturnAddress {
  const stored = JSON.parse(wayBack) as StoredWayBack;
  return { clientId, redirectUri: stored.redirect_uri, state: stored.state, responseMode: stored.response_mode };
}

/**
 * Pushed authorization requests (RFC 9126), stored under the hash of their request_uri. A request that can no longer
 * be answered loses its parameters; one whose screen was shown stays `retentionMs` longer as its way back
 * (docs/decisions/0020, 0022), any other goes (at once when read, else with the lazy cleanup of inserts).
 */
export class SqlRequestStore implements RequestStore {
  constructor(
    private readonly db: Database,
    private readonly retentionMs: number,
  ) {}

  async create(request: StoredAuthorizationRequest, bound?: PendingBound): Promise<Created> {
    const key = clientKeyColumns(request.clientKey);
    const parameters = JSON.stringify(request.parameters);
    const now = request.createdAt;
    const keptUntil = now + this.retentionMs;
    const from = bound?.from ?? null;
    // No bound at most the whole address's count: the insert is then unconditional.
    const max = bound?.max ?? Number.MAX_SAFE_INTEGER;
    /*
     * PostgreSQL: the cleanups, the count of the address's pending requests and the insert are one statement
     * (docs/decisions/0035). With a bound, that statement runs after the address's lock: its snapshot is taken once
     * the lock is held, and the lock is released only after it has committed, so two pushes from one address at once
     * cannot both see room for one more. A statement's own snapshot cannot wait for a lock inside it, hence a session
     * lock taken before it (docs/decisions/0038).
     */
    const postgresql = function* (): Program<Created> {
      if (bound) yield* lock(`pending-requests:${bound.from}`);
      const row = yield* get(PUSHED_ROW, sql`WITH "shrunk" AS (UPDATE "AuthorizationRequest"
          SET "parameters" = NULL, "pushedFrom" = NULL, "purgeAt" = ${at(keptUntil)}
          WHERE ${STILL_PURGE_AT} <= ${at(now)} AND "parameters" IS NOT NULL AND "wayBack" IS NOT NULL AND "idHash" IN (SELECT "idHash" FROM "AuthorizationRequest"
            WHERE "purgeAt" <= ${at(now)} AND "parameters" IS NOT NULL AND "wayBack" IS NOT NULL LIMIT ${CLEANUP_BATCH})),
        "gone" AS (DELETE FROM "AuthorizationRequest" WHERE ${STILL_PURGE_AT} <= ${at(now)} AND ("parameters" IS NULL OR "wayBack" IS NULL)
          AND "idHash" IN (SELECT "idHash" FROM "AuthorizationRequest"
            WHERE "purgeAt" <= ${at(now)} AND ("parameters" IS NULL OR "wayBack" IS NULL) LIMIT ${CLEANUP_BATCH})),
        "pending" AS (SELECT COUNT(*) AS "n", MIN("expiresAt") AS "soonest" FROM (SELECT "expiresAt" FROM "AuthorizationRequest"
            WHERE ${from}::text IS NOT NULL AND "pushedFrom" = ${from} AND "expiresAt" > ${at(now)} ORDER BY "expiresAt" LIMIT ${max}) AS "p"),
        "inserted" AS (INSERT INTO "AuthorizationRequest"
            ("idHash", "clientId", "parameters", "pushedFrom", "dpopJkt", "clientKeyId", "clientKeyAlg", "clientKeyJkt", "createdAt", "expiresAt", "purgeAt")
          SELECT ${request.idHash}, ${request.clientId}, ${parameters}, ${from}, ${request.dpopJkt}, ${key.clientKeyId}, ${key.clientKeyAlg},
            ${key.clientKeyJkt}, CAST(${at(request.createdAt)} AS TIMESTAMP(3)), CAST(${at(request.expiresAt)} AS TIMESTAMP(3)),
            CAST(${at(request.expiresAt)} AS TIMESTAMP(3))
          FROM "pending" WHERE "n" < ${max} RETURNING 1)
        SELECT "n", "soonest", (SELECT COUNT(*) FROM "inserted") AS "created" FROM "pending"`);
      if (row && row.created === 1) return { created: true };
      return { created: false, retryAt: row?.soonest ?? now };
    };
    const sqlite = function* (): Program<Created> {
      yield* run(shrinkExpiredShown(now, keptUntil));
      yield* run(deletePastTheirTime(now));
      if (bound) {
        const pending = yield* get(PENDING_ROW, pendingFrom(bound.from, at(now), bound.max));
        if (pending && pending.n >= bound.max) return { created: false, retryAt: pending.soonest ?? now };
      }
      yield* run(sql`INSERT INTO "AuthorizationRequest"
          ("idHash", "clientId", "parameters", "pushedFrom", "dpopJkt", "clientKeyId", "clientKeyAlg", "clientKeyJkt", "createdAt", "expiresAt", "purgeAt")
        VALUES (${request.idHash}, ${request.clientId}, ${parameters}, ${from}, ${request.dpopJkt}, ${key.clientKeyId},
          ${key.clientKeyAlg}, ${key.clientKeyJkt}, ${at(request.createdAt)}, ${at(request.expiresAt)}, ${at(request.expiresAt)})`);
      return { created: true };
    };
    // SQLite's BEGIN IMMEDIATE already serialises every writer, the bound's check included.
    return this.db.atomicStep({ sqlite, postgresql });
  }

  async find(idHash: string, now: number) {
    const keptUntil = now + this.retentionMs;
    return this.db.execute(function* (): Program<FoundRequest | undefined> {
      const row = yield* get(tables.AuthorizationRequest, sql`SELECT * FROM "AuthorizationRequest" WHERE "idHash" = ${idHash}`);
      if (!row) return undefined;
      if (row.parameters !== null && row.consumedAt === null && row.expiresAt > now) {
        return {
          status: "active",
          request: {
            idHash: row.idHash,
            clientId: row.clientId,
            parameters: JSON.parse(row.parameters) as AuthorizationParameters,
            dpopJkt: row.dpopJkt,
            clientKey: clientKeyFromColumns(row),
            createdAt: row.createdAt,
            expiresAt: row.expiresAt,
          },
        };
      }
      if (row.wayBack === null) {
        // Never shown (or its state too long to keep): it can no longer be answered, and nothing of it is kept.
        yield* run(sql`DELETE FROM "AuthorizationRequest"
          WHERE "idHash" = ${idHash} AND "wayBack" IS NULL AND ("consumedAt" IS NOT NULL OR "expiresAt" <= ${at(now)})`);
        return undefined;
      }
      if (row.parameters !== null) {
        // Expired unanswered: from now on only its way back is kept (a no-op when another reader did it first).
        yield* run(sql`UPDATE "AuthorizationRequest" SET "parameters" = NULL, "pushedFrom" = NULL, "purgeAt" = ${at(keptUntil)}
          WHERE "idHash" = ${idHash} AND "parameters" IS NOT NULL AND "consumedAt" IS NULL AND "expiresAt" <= ${at(now)}`);
      } else if (row.purgeAt <= now) {
        yield* run(sql`DELETE FROM "AuthorizationRequest" WHERE "idHash" = ${idHash} AND "parameters" IS NULL AND "purgeAt" <= ${at(now)}`);
        return undefined;
      }
      const status = row.consumedAt === null ? "expired" : "answered";
      return { status, returnAddress: returnAddressOfRow(row.clientId, row.wayBack), shownTo: row.shownTo };
    });
  }

  async show(idHash: string, showing: Showing) {
    const wayBack = showing.wayBack ? storedWayBack(showing.wayBack) : null;
    return this.db.transaction(function* (): Program<void> {
      yield* lock(`request:${idHash}`);
      const row = yield* get(tables.AuthorizationRequest.pick("expiresAt"), sql`SELECT "expiresAt" FROM "AuthorizationRequest"
        WHERE "idHash" = ${idHash} AND "parameters" IS NOT NULL AND "consumedAt" IS NULL AND "expiresAt" > ${at(showing.now)}`);
      if (!row) return;
      const expiresAt = Math.max(row.expiresAt, showing.until);
      // Conditional on the full request again: a request answered, or shrunk at expiry by another process whose clock
      // is ahead, between the read and this write is left as it is (never revived with only its way back).
      yield* run(sql`UPDATE "AuthorizationRequest" SET "expiresAt" = ${at(expiresAt)}, "purgeAt" = ${at(expiresAt)}, "wayBack" = ${wayBack},
          "shownTo" = ${showing.browser ?? null}
        WHERE "idHash" = ${idHash} AND "parameters" IS NOT NULL AND "consumedAt" IS NULL AND "expiresAt" = ${at(row.expiresAt)}`);
    });
  }

  async consume(idHash: string, now: number) {
    const keptUntil = now + this.retentionMs;
    return this.db.transaction(function* (): Program<boolean> {
      return (yield* consume(idHash, now, keptUntil)) === 1;
    });
  }

  async exchangeForCode(idHash: string, now: number, code: NewAuthorizationCode) {
    const keptUntil = now + this.retentionMs;
    return this.db.transaction(function* (): Program<boolean> {
      if ((yield* consume(idHash, now, keptUntil)) !== 1) return false;
      yield* insertCode(code);
      return true;
    });
  }
}
