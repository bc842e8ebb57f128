import { at, get, run, sql, type Database, type Program } from "../db/sql.ts";
import { returnAddressOf, type AuthorizationParameters, type FoundRequest, type RequestStore, type StoredAuthorizationRequest } from "../oauth/request/request-store.ts";
import type { NewAuthorizationCode } from "../oauth/token/grant-store.ts";
import { clientKeyColumns, clientKeyFromColumns, type ClientKeyColumns } from "./client-key-columns.ts";
import { expiredRowsCleanup } from "./expired-rows.ts";
import { insertCode } from "./sql-grant-store.ts";

type Row = ClientKeyColumns & {
  idHash: string;
  clientId: string;
  parameters: string;
  dpopJkt: string;
  createdAt: number;
  expiresAt: number;
  consumedAt: number | null;
};

const cleanupRequests = expiredRowsCleanup("AuthorizationRequest", "idHash");

/** Only what the way back needs (docs/decisions/0020): a request that can no longer be answered keeps nothing else. */
function returnOnly(parameters: string): string {
  // In the parameters' own shape, so that a row read later parses the same way whichever it holds.
  const { client_id, redirect_uri, state, response_mode } = JSON.parse(parameters) as AuthorizationParameters;
  return JSON.stringify({ client_id, redirect_uri, state, response_mode });
}

/**
 * Marks the request used, if it is live and unused: 1 for the one caller that wins, 0 for every other. Its
 * parameters shrink to its return address in the same statement; they cannot change between the read and the
 * update, since only this step writes them and its condition decides which caller does.
 */
function* consume(idHash: string, now: number): Program<number> {
  const row = yield* get<{ parameters: string }>(sql`SELECT "parameters" FROM "AuthorizationRequest" WHERE "idHash" = ${idHash}`);
  if (!row) return 0;
  return yield* run(sql`UPDATE "AuthorizationRequest" SET "consumedAt" = ${at(now)}, "parameters" = ${returnOnly(row.parameters)}
    WHERE "idHash" = ${idHash} AND "consumedAt" IS NULL AND "expiresAt" > ${at(now)}`);
}

/**
 * Pushed authorization requests (RFC 9126), stored under the hash of their request_uri. An expired or answered
 * request stays `retentionMs` past its expiry as its return address only (docs/decisions/0020); the lazy cleanup
 * counts from there.
 */
export class SqlRequestStore implements RequestStore {
  constructor(
    private readonly db: Database,
    private readonly retentionMs: number,
  ) {}

  async create(request: StoredAuthorizationRequest) {
    const key = clientKeyColumns(request.clientKey);
    const parameters = JSON.stringify(request.parameters);
    const cutoff = request.createdAt - this.retentionMs;
    return this.db.transaction(function* (): Program<void> {
      yield* run(cleanupRequests(cutoff));
      yield* run(sql`INSERT INTO "AuthorizationRequest"
          ("idHash", "clientId", "parameters", "dpopJkt", "clientKeyId", "clientKeyAlg", "clientKeyJkt", "createdAt", "expiresAt")
        VALUES (${request.idHash}, ${request.clientId}, ${parameters}, ${request.dpopJkt}, ${key.clientKeyId}, ${key.clientKeyAlg},
          ${key.clientKeyJkt}, ${at(request.createdAt)}, ${at(request.expiresAt)})`);
    });
  }

  async find(idHash: string, now: number) {
    const retentionMs = this.retentionMs;
    return this.db.execute(function* (): Program<FoundRequest | undefined> {
      const row = yield* get<Row>(sql`SELECT * FROM "AuthorizationRequest" WHERE "idHash" = ${idHash}`);
      if (!row) return undefined;
      if (row.expiresAt + retentionMs <= now) {
        yield* run(sql`DELETE FROM "AuthorizationRequest" WHERE "idHash" = ${idHash}`);
        return undefined;
      }
      const parameters = JSON.parse(row.parameters) as AuthorizationParameters;
      if (row.consumedAt !== null) return { status: "answered", returnAddress: returnAddressOf(parameters) };
      if (row.expiresAt <= now) {
        // Expired unanswered: from now on only its way back is kept (a no-op when another reader did it first).
        yield* run(sql`UPDATE "AuthorizationRequest" SET "parameters" = ${returnOnly(row.parameters)}
          WHERE "idHash" = ${idHash} AND "consumedAt" IS NULL AND "expiresAt" <= ${at(now)}`);
        return { status: "expired", returnAddress: returnAddressOf(parameters) };
      }
      return {
        status: "active",
        request: {
          idHash: row.idHash,
          clientId: row.clientId,
          parameters,
          dpopJkt: row.dpopJkt,
          clientKey: clientKeyFromColumns(row),
          createdAt: row.createdAt,
          expiresAt: row.expiresAt,
        },
      };
    });
  }

  async extend(idHash: string, until: number) {
    return this.db.execute(function* (): Program<void> {
      yield* run(sql`UPDATE "AuthorizationRequest" SET "expiresAt" = ${at(until)}
        WHERE "idHash" = ${idHash} AND "consumedAt" IS NULL AND "expiresAt" < ${at(until)}`);
    });
  }

  async consume(idHash: string, now: number) {
    return this.db.transaction(function* (): Program<boolean> {
      return (yield* consume(idHash, now)) === 1;
    });
  }

  async exchangeForCode(idHash: string, now: number, code: NewAuthorizationCode) {
    return this.db.transaction(function* (): Program<boolean> {
      if ((yield* consume(idHash, now)) !== 1) return false;
      yield* insertCode(code);
      return true;
    });
  }
}
