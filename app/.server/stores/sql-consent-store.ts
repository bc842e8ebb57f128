import { mergedConsent, type ConsentAnswer, type ConsentStore, type StoredConsent } from "../accounts/consent-store.ts";
import { tables } from "../db/rows.generated.ts";
import { all, at, get, lock, run, sql, type Database, type Program } from "../db/sql.ts";
import { revokeClientGrants } from "./sql-grant-store.ts";

const CONSENT_ROW = tables.AuthorizedClient.pick("clientId", "scope", "declined", "createdAt", "updatedAt");

/** Remembered consent (table "AuthorizedClient") and disconnecting an app. */
export class SqlConsentStore implements ConsentStore {
  constructor(private readonly db: Database) {}

  async remember(accountDid: string, clientId: string, answer: ConsentAnswer, now: number) {
    return this.db.transaction(function* (): Program<void> {
      // The consent is read then written: two approvals at once must each see the other's values.
      yield* lock(`consent:${accountDid}:${clientId}`);
      const existing = yield* get(tables.AuthorizedClient.pick("scope", "declined"), sql`SELECT "scope", "declined" FROM "AuthorizedClient"
        WHERE "accountDid" = ${accountDid} AND "clientId" = ${clientId}`);
      if (existing) {
        // Written back only over what was read. Forgetting the app and the account lockdown delete the row without this
        // lock: on PostgreSQL a delete committed after the read makes this UPDATE wait for it and then find no row, and
        // the approval is then merged with nothing, as had it come after the delete (it does on SQLite). Merged with
        // what was read, it would bring the forgotten values back.
        const merged = mergedConsent(existing, answer);
        const written = yield* run(sql`UPDATE "AuthorizedClient" SET "scope" = ${merged.scope}, "declined" = ${merged.declined}, "updatedAt" = ${at(now)}
          WHERE "accountDid" = ${accountDid} AND "clientId" = ${clientId} AND "scope" = ${existing.scope} AND "declined" = ${existing.declined}`);
        if (written === 1) return;
      }
      const { scope, declined } = mergedConsent(undefined, answer);
      yield* run(sql`INSERT INTO "AuthorizedClient" ("accountDid", "clientId", "scope", "declined", "createdAt", "updatedAt")
        VALUES (${accountDid}, ${clientId}, ${scope}, ${declined}, ${at(now)}, ${at(now)})
        ON CONFLICT ("accountDid", "clientId") DO UPDATE SET "scope" = excluded."scope", "declined" = excluded."declined", "updatedAt" = excluded."updatedAt"`);
    });
  }

  async find(accountDid: string, clientId: string) {
    return this.db.execute(function* (): Program<StoredConsent | undefined> {
      return yield* get(CONSENT_ROW, sql`SELECT "clientId", "scope", "declined", "createdAt", "updatedAt" FROM "AuthorizedClient"
        WHERE "accountDid" = ${accountDid} AND "clientId" = ${clientId}`);
    });
  }

  async list(accountDid: string) {
    return this.db.execute(function* (): Program<StoredConsent[]> {
      return yield* all(CONSENT_ROW, sql`SELECT "clientId", "scope", "declined", "createdAt", "updatedAt" FROM "AuthorizedClient"
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
