import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, raceOn } from "../../../tests/helpers/databases.ts";
import { countOf, insertAccount, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import type { ConsentStore } from "../accounts/consent-store.ts";
import { sql, type Database } from "../db/sql.ts";
import { consentStoreContract, type ConsentStoreSubject } from "./contracts/consent-store-contract.ts";
import { SqlConsentStore } from "./sql-consent-store.ts";
import { SqlGrantStore } from "./sql-grant-store.ts";

const NOW = 1_800_000_000_000;
const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
const APP = "https://app.example/client-metadata.json";
const EMAIL = "transition:email";

/** An approval that granted `values` and declined nothing. */
const granted = (...values: string[]) => ({ granted: values, declined: [] });

/** The consent store with the contract's two accounts, beside the grant store on the same database, counted in its tables. */
async function sqlConsentStore(db: Database): Promise<ConsentStoreSubject> {
  await insertAccount(db, ALICE);
  await insertAccount(db, BOB);
  return {
    store: new SqlConsentStore(db),
    grants: new SqlGrantStore(db),
    kept: async (did, clientId) => ({
      grants: await countOf(db, sql`SELECT COUNT(*) AS "n" FROM "Grant" WHERE "accountDid" = ${did} AND "clientId" = ${clientId}`),
      codes: await countOf(db, sql`SELECT COUNT(*) AS "n" FROM "AuthorizationCode" WHERE "accountDid" = ${did} AND "clientId" = ${clientId}`),
    }),
    tokensOf: (grantId) =>
      countOf(db, sql`SELECT (SELECT COUNT(*) FROM "AccessToken" WHERE "grantId" = ${grantId}) + (SELECT COUNT(*) FROM "RefreshToken" WHERE "grantId" = ${grantId}) AS "n"`),
  };
}

/**
 * Remembered consent and disconnecting an app on each engine: the contract every consent store keeps
 * (contracts/consent-store-contract.ts, also run on the memory store in tests/helpers/memory-stores.test.ts), then
 * what only the SQL store can be asked: approvals at once from several connections.
 */
describe.each(ENGINES)("SqlConsentStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);

  consentStoreContract("the ConsentStore contract", () => sqlConsentStore(shared.db));

  describe("races between connections", () => {
    let store: ConsentStore;

    beforeEach(async () => {
      ({ store } = await sqlConsentStore(shared.db));
    });

    it(`RACE: 20 approvals with different scope values ${raceOn(engine, 4)}: the consent holds every value`, async () => {
      const stores = shared.others(4).map((db) => new SqlConsentStore(db));
      const values = Array.from({ length: 20 }, (_, i) => `repo:com.example.collection${i}`);
      await Promise.all(values.map((value, i) => stores[i % 4]!.remember(ALICE, APP, granted("atproto", value), NOW + i)));
      const remembered = (await store.find(ALICE, APP))!.scope.split(" ");
      expect(remembered.sort()).toEqual(["atproto", ...values].sort());
    });

    it(`RACE: 20 approvals ${raceOn(engine, 4)}, half declining the email and half granting it: every granted value kept, the email either granted or declined, never both`, async () => {
      const stores = shared.others(4).map((db) => new SqlConsentStore(db));
      const values = Array.from({ length: 20 }, (_, i) => `repo:com.example.collection${i}`);
      await Promise.all(
        values.map((value, i) =>
          stores[i % 4]!.remember(ALICE, APP, i % 2 ? { granted: ["atproto", value, EMAIL], declined: [] } : { granted: ["atproto", value], declined: [EMAIL] }, NOW + i),
        ),
      );
      const consent = (await store.find(ALICE, APP))!;
      const scope = consent.scope.split(" ");
      expect(scope.filter((value) => value !== EMAIL).sort()).toEqual(["atproto", ...values].sort());
      expect([scope.includes(EMAIL), consent.declined === EMAIL].filter(Boolean)).toHaveLength(1);
    });
  });
});
