import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, raceOn } from "../../../tests/helpers/databases.ts";
import { raceAgainstGatedTransaction } from "../../../tests/helpers/postgres.ts";
import { countOf, insertAccount, issuedTokens, newCode, newGrant, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { parseItem, withdrawsRepo, parseItems, type PermissionItem } from "../oauth/scopes/permission-items.ts";
import { DAY } from "../util/time.ts";
import type { PostgresDatabase } from "../db/postgres-database.ts";
import type { ConsentStore } from "../accounts/consent-store.ts";
import { sql, type Database } from "../db/sql.ts";
import { consentStoreContract, type ConsentStoreSubject } from "./contracts/consent-store-contract.ts";
import { SqlAccountStore } from "./sql-account-store.ts";
import { SqlConsentStore } from "./sql-consent-store.ts";
import { SqlGrantStore } from "./sql-grant-store.ts";

const NOW = 1_800_000_000_000;
const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
const APP = "https://app.example/client-metadata.json";
const EMAIL = "transition:email";
const POSTS = "repo:app.bsky.feed.post";
const LIKES = "repo:app.bsky.feed.like";
const item = (text: string): PermissionItem => parseItem(text)!;

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

    /** A connected app with a grant per round: likes and posts, one refresh token each. */
    const connectRounds = async (rounds: number) => {
      const grants = new SqlGrantStore(shared.db);
      await store.remember(ALICE, APP, granted("atproto", POSTS, LIKES), NOW);
      for (let round = 0; round < rounds; round++) {
        await grants.insertCode(newCode(`code-${round}`, { accountDid: ALICE, clientId: APP }));
        await grants.redeemCode(`code-${round}`, NOW, newGrant(`grant-${round}`, { accountDid: ALICE, clientId: APP, scope: `atproto ${POSTS} ${LIKES}` }), issuedTokens(`${round}`));
      }
    };

    it(`RACE: narrowings from several tabs at once ${raceOn(engine, 4)}: every permission taken back holds on the consent and every grant`, async () => {
      await connectRounds(3);
      const stores = shared.others(4).map((db) => new SqlConsentStore(db));
      const taken = ["create", "update", "delete"].flatMap((action) => [`${LIKES}?action=${action}`, `${POSTS}?action=${action}`]);
      await Promise.all(taken.map((text, i) => stores[i % 4]!.withdraw(ALICE, APP, [item(text)], NOW + i)));
      expect(parseItems((await store.find(ALICE, APP))!.withdrawn).length).toBe(taken.length);
      const grants = new SqlGrantStore(shared.db);
      for (let round = 0; round < 3; round++) expect(parseItems((await grants.findAccessToken(`access-${round}`, NOW))!.grant.withdrawn).length).toBe(taken.length);
    });

    it(`RACE: 20 refreshes, each racing a narrowing of its app ${raceOn(engine, 4)}: no token issued may use what was taken back, and an answer naming it came first`, async () => {
      const rounds = 20;
      await connectRounds(rounds);
      const connections = shared.others(4);
      const later = NOW + DAY;
      const likeCreate = item(`${LIKES}?action=create`);
      const outcomes = await Promise.all(
        Array.from({ length: rounds }, async (_, round) => {
          const [, rotated] = await Promise.all([
            new SqlConsentStore(connections[round % 4]!).withdraw(ALICE, APP, [likeCreate], later),
            new SqlGrantStore(connections[(round + 1) % 4]!).rotateRefreshToken(`refresh-${round}`, `grant-${round}`, later, issuedTokens(`${round}-next`, later)),
          ]);
          return { round, rotated };
        }),
      );
      const grants = new SqlGrantStore(shared.db);
      for (const { round, rotated } of outcomes) {
        expect(rotated).toBeDefined();
        // The token the refresh issued is refused likes, whichever step went first.
        const owner = (await grants.findAccessToken(`access-${round}-next`, later))!;
        expect(withdrawsRepo(parseItems(owner.grant.withdrawn), "app.bsky.feed.like", "create")).toBe(true);
      }
    });
  });
});

/**
 * Taking a permission back racing the app's refresh (docs/decisions/0053): the refresh's answer names the scope as the
 * rotation saw its grant. A narrowing that committed first must be in it: on PostgreSQL the rotation's update of the
 * grant waits for the narrowing's row lock and then reads the narrowed row.
 */
describe("SqlConsentStore on postgresql: a narrowing racing a refresh of its app", () => {
  const shared = useSharedDatabase("postgresql");

  it("RACE (two connections): the refresh waits for the narrowing and answers what it took back", async () => {
    const { store } = await sqlConsentStore(shared.db);
    const grants = new SqlGrantStore(shared.db);
    await store.remember(ALICE, APP, granted("atproto", POSTS, LIKES), NOW);
    await grants.insertCode(newCode("code", { accountDid: ALICE, clientId: APP }));
    await grants.redeemCode("code", NOW, newGrant("grant", { accountDid: ALICE, clientId: APP, scope: `atproto ${POSTS} ${LIKES}` }), issuedTokens("first"));
    const [narrowed, rotated] = await raceAgainstGatedTransaction(
      shared.db as PostgresDatabase,
      (gated) => new SqlConsentStore(gated).withdraw(ALICE, APP, [item(`${LIKES}?action=create`)], NOW + 1),
      () => grants.rotateRefreshToken("refresh-first", "grant", NOW + 2, issuedTokens("second", NOW + 2)),
    );
    expect(narrowed).toEqual({ grants: 1 });
    expect(rotated).toEqual({ withdrawn: `${LIKES}?action=create` });
  });
});

/**
 * "Forget this app" racing an approval of the same app: the approval reads the remembered consent and then writes it
 * back merged with its answer. On SQLite one of the two goes first. On PostgreSQL an approval that read the consent
 * before forget committed must not write the forgotten values back (its upsert would wait for forget's row lock, then
 * find no row and insert what it merged): the app would regain the scopes the person just took away, and prompt=none
 * would issue codes for them without asking.
 */
describe("SqlConsentStore on postgresql: forgetting an app racing an approval of it", () => {
  const shared = useSharedDatabase("postgresql");

  /** The two steps that delete a remembered consent without its lock, each with how it says it deleted one. */
  const deleters = [
    ["forgetting the app", async (db: Database) => (await new SqlConsentStore(db).forget(ALICE, APP)).consent],
    ["the account lockdown disconnecting its apps", async (db: Database) => (await new SqlAccountStore(db).secure(ALICE, "no-session", true)).apps === 1],
  ] as const;

  it.each(deleters)("RACE (two connections): an approval that read the consent during %s does not bring the deleted values back", async (_name, deleteConsent) => {
    const { store } = await sqlConsentStore(shared.db);
    await store.remember(ALICE, APP, granted("atproto", "repo:com.example.secret"), NOW);
    const [deleted] = await raceAgainstGatedTransaction(
      shared.db as PostgresDatabase,
      // The deleting transaction, held open after its writes until both wait.
      deleteConsent,
      // The approval, from another connection, while the delete is not yet committed.
      () => store.remember(ALICE, APP, granted("atproto"), NOW + 1),
    );
    expect(deleted).toBe(true);
    expect((await store.find(ALICE, APP))?.scope).toBe("atproto");
  });
});
