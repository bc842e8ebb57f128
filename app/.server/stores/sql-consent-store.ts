import { mergedConsent, type ConsentAnswer, type ConsentStore, type StoredConsent } from "../accounts/consent-store.ts";
import { tables } from "../db/rows.generated.ts";
import { all, at, get, lock, run, send, sql, type Database, type Program } from "../db/sql.ts";
import { joinItems, type PermissionItem } from "../oauth/scopes/permission-items.ts";
import { oauthApp } from "../activity/activity-lines.ts";
import { forgetActivity } from "./sql-activity-store.ts";
import { revokeClientGrants } from "./sql-grant-store.ts";

const CONSENT_ROW = tables.AuthorizedClient.pick("clientId", "scope", "declined", "withdrawn", "createdAt", "updatedAt");

/** Remembered consent (table "AuthorizedClient") and disconnecting an app. */
export class SqlConsentStore implements ConsentStore {
  constructor(private readonly db: Database) {}

  async remember(accountDid: string, clientId: string, answer: ConsentAnswer, now: number) {
    return this.db.transaction(function* (): Program<{ firstTime: boolean }> {
      // The consent is read then written: two approvals at once must each see the other's values.
      yield* lockConsent(accountDid, clientId);
      const existing = yield* get(tables.AuthorizedClient.pick("scope", "declined", "withdrawn"), sql`SELECT "scope", "declined", "withdrawn" FROM "AuthorizedClient"
        WHERE "accountDid" = ${accountDid} AND "clientId" = ${clientId}`);
      if (existing) {
        // Written back only over what was read. Forgetting the app and the account lockdown delete the row without this
        // lock: on PostgreSQL a delete committed after the read makes this UPDATE wait for it and then find no row, and
        // the approval is then merged with nothing, as had it come after the delete (it does on SQLite). Merged with
        // what was read, it would bring the forgotten values back.
        const merged = mergedConsent(existing, answer);
        const written = yield* run(sql`UPDATE "AuthorizedClient" SET "scope" = ${merged.scope}, "declined" = ${merged.declined}, "withdrawn" = ${merged.withdrawn},
            "updatedAt" = ${at(now)}
          WHERE "accountDid" = ${accountDid} AND "clientId" = ${clientId} AND "scope" = ${existing.scope} AND "declined" = ${existing.declined}
            AND "withdrawn" = ${existing.withdrawn}`);
        if (written === 1) return { firstTime: false };
      }
      const { scope, declined } = mergedConsent(undefined, answer);
      yield* run(sql`INSERT INTO "AuthorizedClient" ("accountDid", "clientId", "scope", "declined", "withdrawn", "createdAt", "updatedAt")
        VALUES (${accountDid}, ${clientId}, ${scope}, ${declined}, '', ${at(now)}, ${at(now)})
        ON CONFLICT ("accountDid", "clientId") DO UPDATE SET "scope" = excluded."scope", "declined" = excluded."declined", "withdrawn" = excluded."withdrawn",
          "updatedAt" = excluded."updatedAt"`);
      return { firstTime: true };
    });
  }

  async find(accountDid: string, clientId: string) {
    return this.db.execute(function* (): Program<StoredConsent | undefined> {
      return yield* get(CONSENT_ROW, sql`SELECT "clientId", "scope", "declined", "withdrawn", "createdAt", "updatedAt" FROM "AuthorizedClient"
        WHERE "accountDid" = ${accountDid} AND "clientId" = ${clientId}`);
    });
  }

  async list(accountDid: string) {
    return this.db.execute(function* (): Program<StoredConsent[]> {
      return yield* all(CONSENT_ROW, sql`SELECT "clientId", "scope", "declined", "withdrawn", "createdAt", "updatedAt" FROM "AuthorizedClient"
        WHERE "accountDid" = ${accountDid} ORDER BY "updatedAt" DESC, "clientId" ASC`);
    });
  }

  async forget(accountDid: string, clientId: string) {
    return this.db.transaction(function* (): Program<{ grants: number; consent: boolean }> {
      const grants = yield* revokeClientGrants(accountDid, clientId);
      const consent = (yield* run(sql`DELETE FROM "AuthorizedClient" WHERE "accountDid" = ${accountDid} AND "clientId" = ${clientId}`)) === 1;
      // Its history goes with its access (docs/decisions/0053).
      yield* forgetActivity(accountDid, oauthApp(clientId));
      return { grants, consent };
    });
  }

  async withdraw(accountDid: string, clientId: string, items: readonly PermissionItem[], now: number) {
    return this.db.transaction(function* (): Program<{ grants: number } | undefined> {
      // The lock remembering takes: an approval and a narrowing never lose each other's change, and two narrowings
      // (two tabs) both hold. A refresh does not write what this writes; it reads the grant's row in its own step
      // (SqlGrantStore.rotateRefreshToken), which on PostgreSQL waits for this transaction's row locks.
      yield* lockConsent(accountDid, clientId);
      const consent = yield* get(tables.AuthorizedClient.pick("withdrawn"), sql`SELECT "withdrawn" FROM "AuthorizedClient"
        WHERE "accountDid" = ${accountDid} AND "clientId" = ${clientId}`);
      if (!consent) return undefined;
      yield* send(sql`UPDATE "AuthorizedClient" SET "withdrawn" = ${joinItems(consent.withdrawn, items)}, "updatedAt" = ${at(now)}
        WHERE "accountDid" = ${accountDid} AND "clientId" = ${clientId}`);
      const grants = yield* all(tables.Grant.pick("id", "withdrawn"), sql`SELECT "id", "withdrawn" FROM "Grant" WHERE "accountDid" = ${accountDid} AND "clientId" = ${clientId}`);
      for (const grant of grants) yield* send(sql`UPDATE "Grant" SET "withdrawn" = ${joinItems(grant.withdrawn, items)} WHERE "id" = ${grant.id}`);
      // A code approved before, not yet redeemed, would make a grant without the narrowing: it ends, and the app asks again.
      yield* send(sql`DELETE FROM "AuthorizationCode" WHERE "accountDid" = ${accountDid} AND "clientId" = ${clientId} AND "usedAt" IS NULL`);
      return { grants: grants.length };
    });
  }
}

/** The lock of one account's consent to one app: remembering and narrowing read it and write it back. */
function* lockConsent(accountDid: string, clientId: string): Program<void> {
  yield* lock(`consent:${accountDid}:${clientId}`);
}
