import type { ConsentStore, StoredConsent } from "../accounts/consent-store.ts";
import { tables } from "../db/rows.generated.ts";
import { all, at, get, lock, run, sql, type Database, type Program } from "../db/sql.ts";
import { revokeClientGrants } from "./sql-grant-store.ts";

const CONSENT_ROW = tables.AuthorizedClient.pick("clientId", "scope", "createdAt", "updatedAt");

/** Remembered consent (table "AuthorizedClient") and disconnecting an app. */
export class SqlConsentStore implements ConsentStore {
  constructor(private readonly db: Database) {}

  async remember(accountDid: string, clientId: string, scopeValues: readonly string[], now: number) {
    return this.db.transaction(function* (): Program<void> {
      // The union is read then written: two approvals at once must each see the other's values.
      yield* lock(`consent:${accountDid}:${clientId}`);
      const existing = yield* get(tables.AuthorizedClient.pick("scope"), sql`SELECT "scope" FROM "AuthorizedClient" WHERE "accountDid" = ${accountDid} AND "clientId" = ${clientId}`);
      const union = [...new Set([...(existing?.scope ?? "").split(" ").filter(Boolean), ...scopeValues])].join(" ");
      yield* run(sql`INSERT INTO "AuthorizedClient" ("accountDid", "clientId", "scope", "createdAt", "updatedAt")
        VALUES (${accountDid}, ${clientId}, ${union}, ${at(now)}, ${at(now)})
        ON CONFLICT ("accountDid", "clientId") DO UPDATE SET "scope" = excluded."scope", "updatedAt" = excluded."updatedAt"`);
    });
  }

  async find(accountDid: string, clientId: string) {
    return this.db.execute(function* (): Program<StoredConsent | undefined> {
      return yield* get(CONSENT_ROW, sql`SELECT "clientId", "scope", "createdAt", "updatedAt" FROM "AuthorizedClient"
        WHERE "accountDid" = ${accountDid} AND "clientId" = ${clientId}`);
    });
  }

  async list(accountDid: string) {
    return this.db.execute(function* (): Program<StoredConsent[]> {
      return yield* all(CONSENT_ROW, sql`SELECT "clientId", "scope", "createdAt", "updatedAt" FROM "AuthorizedClient"
        WHERE "accountDid" = ${accountDid} ORDER BY "updatedAt" DESC, "clientId" ASC`);
    });
  }

  async forget(accountDid: string, clientId: string) {
    return this.db.transaction(function* (): Program<{ grants: number; consent: boolean }> {
      const grants = yield* revokeClientGrants(accountDid, clientId);
      const consent = (yield* run(sql`DELETE FROM "AuthorizedClient" WHERE "accountDid" = ${accountDid} AND "clientId" = ${clientId}`)) === 1;
      return { grants, consent };
    });
  }
}
