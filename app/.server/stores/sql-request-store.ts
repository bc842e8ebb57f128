import { at, get, run, sql, type Database, type Program } from "../db/sql.ts";
import type { AuthorizationParameters, RequestStore, StoredAuthorizationRequest } from "../oauth/request/request-store.ts";
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

/** Marks the request used, if it is live and unused: 1 for the one caller that wins, 0 for every other. */
function* consume(idHash: string, now: number): Program<number> {
  return yield* run(sql`UPDATE "AuthorizationRequest" SET "consumedAt" = ${at(now)}
    WHERE "idHash" = ${idHash} AND "consumedAt" IS NULL AND "expiresAt" > ${at(now)}`);
}

/** Pushed authorization requests (RFC 9126), stored under the hash of their request_uri. */
export class SqlRequestStore implements RequestStore {
  constructor(private readonly db: Database) {}

  async create(request: StoredAuthorizationRequest) {
    const key = clientKeyColumns(request.clientKey);
    const parameters = JSON.stringify(request.parameters);
    return this.db.transaction(function* (): Program<void> {
      yield* run(cleanupRequests(request.createdAt));
      yield* run(sql`INSERT INTO "AuthorizationRequest"
          ("idHash", "clientId", "parameters", "dpopJkt", "clientKeyId", "clientKeyAlg", "clientKeyJkt", "createdAt", "expiresAt")
        VALUES (${request.idHash}, ${request.clientId}, ${parameters}, ${request.dpopJkt}, ${key.clientKeyId}, ${key.clientKeyAlg},
          ${key.clientKeyJkt}, ${at(request.createdAt)}, ${at(request.expiresAt)})`);
    });
  }

  async findActive(idHash: string, now: number) {
    return this.db.execute(function* (): Program<StoredAuthorizationRequest | undefined> {
      const row = yield* get<Row>(sql`SELECT * FROM "AuthorizationRequest" WHERE "idHash" = ${idHash}`);
      if (!row) return undefined;
      if (row.expiresAt <= now) {
        yield* run(sql`DELETE FROM "AuthorizationRequest" WHERE "idHash" = ${idHash}`);
        return undefined;
      }
      if (row.consumedAt !== null) return undefined;
      return {
        idHash: row.idHash,
        clientId: row.clientId,
        parameters: JSON.parse(row.parameters) as AuthorizationParameters,
        dpopJkt: row.dpopJkt,
        clientKey: clientKeyFromColumns(row),
        createdAt: row.createdAt,
        expiresAt: row.expiresAt,
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
    return this.db.execute(function* (): Program<boolean> {
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
