import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, raceOn } from "../../../tests/helpers/databases.ts";
import { countOf, insertAccount, issuedTokens, newCode, newGrant, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { sql } from "../db/sql.ts";
import { SqlConsentStore } from "./sql-consent-store.ts";
import { SqlGrantStore } from "./sql-grant-store.ts";

const NOW = 1_800_000_000_000;
const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
const APP = "https://app.example/client-metadata.json";
const EMAIL = "transition:email";

/** An approval that granted `values` and declined nothing. */
const granted = (...values: string[]) => ({ granted: values, declined: [] });
const OTHER_APP = "https://other.example/client-metadata.json";

/** Remembered consent and disconnecting an app, on each engine. */
describe.each(ENGINES)("SqlConsentStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  let store: SqlConsentStore;
  let grants: SqlGrantStore;

  beforeEach(async () => {
    store = new SqlConsentStore(shared.db);
    grants = new SqlGrantStore(shared.db);
    await insertAccount(shared.db, ALICE);
    await insertAccount(shared.db, BOB);
  });

  /** A grant with its two tokens, and an unredeemed code, of `did` for `clientId` (codes: the redeemed one and the pending one). */
  const connect = async (did: string, clientId: string, tag: string) => {
    await grants.insertCode(newCode(`code-${tag}`, { accountDid: did, clientId }));
    await grants.redeemCode(`code-${tag}`, NOW, newGrant(`grant-${tag}`, { accountDid: did, clientId }), issuedTokens(tag));
    await grants.insertCode(newCode(`pending-${tag}`, { accountDid: did, clientId }));
  };
  const rowsOfApp = async (did: string, clientId: string) => ({
    grants: await countOf(shared.db, sql`SELECT COUNT(*) AS "n" FROM "Grant" WHERE "accountDid" = ${did} AND "clientId" = ${clientId}`),
    codes: await countOf(shared.db, sql`SELECT COUNT(*) AS "n" FROM "AuthorizationCode" WHERE "accountDid" = ${did} AND "clientId" = ${clientId}`),
    consent: (await store.find(did, clientId)) !== undefined,
  });

  it("remembers scope values, and each approval adds its own to the ones before (no repeats)", async () => {
    await store.remember(ALICE, APP, granted("atproto", "repo:app.bsky.feed.post"), NOW);
    await store.remember(ALICE, APP, granted("atproto", "rpc:app.bsky.feed.getTimeline?aud=*"), NOW + 10);
    expect(await store.find(ALICE, APP)).toEqual({
      clientId: APP,
      scope: "atproto repo:app.bsky.feed.post rpc:app.bsky.feed.getTimeline?aud=*",
      declined: "",
      createdAt: NOW,
      updatedAt: NOW + 10,
    });
    expect(await store.find(ALICE, OTHER_APP)).toBeUndefined();
    expect(await store.find(BOB, APP)).toBeUndefined();
  });

  it("records the optional values declined beside the ones granted; the latest answer about a value wins (docs/decisions/0032)", async () => {
    await store.remember(ALICE, APP, { granted: ["atproto", "transition:generic"], declined: [EMAIL] }, NOW);
    expect(await store.find(ALICE, APP)).toMatchObject({ scope: "atproto transition:generic", declined: EMAIL });
    // Another approval that does not ask for the email leaves the decline as it is.
    await store.remember(ALICE, APP, granted("atproto"), NOW + 1);
    expect(await store.find(ALICE, APP)).toMatchObject({ scope: "atproto transition:generic", declined: EMAIL });
    // Ticked this time: granted, no longer declined; unticked again: out of the scope, declined again.
    await store.remember(ALICE, APP, granted("atproto", EMAIL), NOW + 2);
    expect(await store.find(ALICE, APP)).toMatchObject({ scope: `atproto transition:generic ${EMAIL}`, declined: "" });
    await store.remember(ALICE, APP, { granted: ["atproto"], declined: [EMAIL] }, NOW + 3);
    expect(await store.find(ALICE, APP)).toMatchObject({ scope: "atproto transition:generic", declined: EMAIL });
    expect((await store.list(ALICE))[0]).toMatchObject({ clientId: APP, declined: EMAIL });
    // Forgetting the app forgets the decline with the rest.
    await store.forget(ALICE, APP);
    expect(await store.find(ALICE, APP)).toBeUndefined();
  });

  it("lists an account's consents, most recently changed first", async () => {
    await store.remember(ALICE, APP, granted("atproto"), NOW);
    await store.remember(ALICE, OTHER_APP, granted("atproto"), NOW + 1);
    await store.remember(BOB, APP, granted("atproto"), NOW + 2);
    expect((await store.list(ALICE)).map((consent) => consent.clientId)).toEqual([OTHER_APP, APP]);
    await store.remember(ALICE, APP, granted("transition:generic"), NOW + 3);
    expect((await store.list(ALICE)).map((consent) => consent.clientId)).toEqual([APP, OTHER_APP]);
  });

  it("forgetting an app ends its grants with their tokens, its unredeemed codes and the consent, together", async () => {
    await connect(ALICE, APP, "a1");
    await connect(ALICE, OTHER_APP, "a2");
    await connect(BOB, APP, "b1");
    await store.remember(ALICE, APP, granted("atproto"), NOW);
    await store.remember(ALICE, OTHER_APP, granted("atproto"), NOW);
    expect(await store.forget(ALICE, APP)).toEqual({ grants: 1, consent: true });
    expect(await rowsOfApp(ALICE, APP)).toEqual({ grants: 0, codes: 0, consent: false });
    expect(await countOf(shared.db, sql`SELECT (SELECT COUNT(*) FROM "AccessToken" WHERE "grantId" = 'grant-a1') + (SELECT COUNT(*) FROM "RefreshToken" WHERE "grantId" = 'grant-a1') AS "n"`)).toBe(0);
    expect(await grants.redeemCode("pending-a1", NOW, newGrant("late"), issuedTokens("late"))).toBe(false);
    expect(await rowsOfApp(ALICE, OTHER_APP)).toMatchObject({ grants: 1, codes: 2, consent: true });
    expect(await rowsOfApp(BOB, APP)).toMatchObject({ grants: 1, codes: 2 });
    // Nothing left to forget.
    expect(await store.forget(ALICE, APP)).toEqual({ grants: 0, consent: false });
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
