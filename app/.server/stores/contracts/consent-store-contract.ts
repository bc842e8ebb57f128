import { beforeEach, describe, expect, it } from "vitest";
import { FIXTURE_TIME, issuedTokens, newCode, newGrant } from "../../../../tests/helpers/store-fixtures.ts";
import type { ConsentStore } from "../../accounts/consent-store.ts";
import type { GrantStore } from "../../oauth/token/grant-store.ts";
import { parseItem, type PermissionItem } from "../../oauth/scopes/permission-items.ts";

const NOW = FIXTURE_TIME;
const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
const APP = "https://app.example/client-metadata.json";
const OTHER_APP = "https://other.example/client-metadata.json";
const EMAIL = "transition:email";

/** An approval that granted `values` and declined nothing. */
const granted = (...values: string[]) => ({ granted: values, declined: [] });
const item = (text: string): PermissionItem => parseItem(text)!;
const LIKES = "repo:app.bsky.feed.like";

/**
 * A consent store under test, empty, beside the grant store its `forget` disconnects apps in; the accounts
 * did:plc:alice and did:plc:bob exist. `kept` counts what the grant store holds of an account's app (rows or map
 * entries), `tokensOf` a grant's tokens, so that forgetting is seen to remove all of it.
 */
export type ConsentStoreSubject = {
  store: ConsentStore;
  grants: GrantStore;
  kept(accountDid: string, clientId: string): Promise<{ grants: number; codes: number }>;
  tokensOf(grantId: string): Promise<number>;
};

/**
 * Remembered consent and disconnecting an app (docs/decisions/0032), run on each SQL engine and on the memory store the
 * managers' unit tests use. Races between connections stay in sql-consent-store.test.ts: one memory store has no
 * second connection to race with.
 */
export function consentStoreContract(name: string, open: () => Promise<ConsentStoreSubject>): void {
  describe(name, () => {
    let subject: ConsentStoreSubject;
    let store: ConsentStore;

    beforeEach(async () => {
      subject = await open();
      store = subject.store;
    });


    /** A grant with its two tokens, and an unredeemed code, of `did` for `clientId` (codes: the redeemed one and the pending one). */
    const connect = async (did: string, clientId: string, tag: string) => {
      await subject.grants.insertCode(newCode(`code-${tag}`, { accountDid: did, clientId }));
      await subject.grants.redeemCode(`code-${tag}`, NOW, newGrant(`grant-${tag}`, { accountDid: did, clientId }), issuedTokens(tag));
      await subject.grants.insertCode(newCode(`pending-${tag}`, { accountDid: did, clientId }));
    };
    const keptOfApp = async (did: string, clientId: string) => ({ ...(await subject.kept(did, clientId)), consent: (await store.find(did, clientId)) !== undefined });

    it("remembers scope values, and each approval adds its own to the ones before (no repeats)", async () => {
      await store.remember(ALICE, APP, granted("atproto", "repo:app.bsky.feed.post"), NOW);
      await store.remember(ALICE, APP, granted("atproto", "rpc:app.bsky.feed.getTimeline?aud=*"), NOW + 10);
      expect(await store.find(ALICE, APP)).toEqual({
        clientId: APP,
        scope: "atproto repo:app.bsky.feed.post rpc:app.bsky.feed.getTimeline?aud=*",
        declined: "",
        withdrawn: "",
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
      expect(await keptOfApp(ALICE, APP)).toEqual({ grants: 0, codes: 0, consent: false });
      expect(await subject.tokensOf("grant-a1")).toBe(0);
      expect(await subject.grants.redeemCode("pending-a1", NOW, newGrant("late"), issuedTokens("late"))).toBe(false);
      expect(await keptOfApp(ALICE, OTHER_APP)).toMatchObject({ grants: 1, codes: 2, consent: true });
      expect(await keptOfApp(BOB, APP)).toMatchObject({ grants: 1, codes: 2 });
      // Nothing left to forget.
      expect(await store.forget(ALICE, APP)).toEqual({ grants: 0, consent: false });
    });

    it("taking a permission back marks it on the remembered consent and on every grant of the app, and ends its codes not yet redeemed (docs/decisions/0053)", async () => {
      await connect(ALICE, APP, "a1");
      await connect(ALICE, APP, "a2");
      await connect(ALICE, OTHER_APP, "o1");
      await store.remember(ALICE, APP, granted("atproto", LIKES), NOW);
      expect(await store.withdraw(ALICE, APP, [item(`${LIKES}?action=create`)], NOW + 1)).toEqual({ grants: 2 });
      expect(await store.withdraw(ALICE, APP, [item(`${LIKES}?action=delete`), item(`${LIKES}?action=create`)], NOW + 2)).toEqual({ grants: 2 });
      const both = `${LIKES}?action=create ${LIKES}?action=delete`;
      expect(await store.find(ALICE, APP)).toMatchObject({ scope: `atproto ${LIKES}`, withdrawn: both, updatedAt: NOW + 2 });
      for (const tag of ["a1", "a2"]) expect((await subject.grants.findAccessToken(`access-${tag}`, NOW))?.grant.withdrawn).toBe(both);
      // The codes approved before it would make grants without it: they end. The other app is untouched.
      expect(await keptOfApp(ALICE, APP)).toEqual({ grants: 2, codes: 2, consent: true });
      expect(await subject.grants.redeemCode("pending-a1", NOW, newGrant("late", { clientId: APP }), issuedTokens("late"))).toBe(false);
      expect((await subject.grants.findAccessToken("access-o1", NOW))?.grant.withdrawn).toBe("");
      expect(await keptOfApp(ALICE, OTHER_APP)).toMatchObject({ grants: 1, codes: 2 });
      // An app not connected: nothing to narrow.
      expect(await store.withdraw(BOB, APP, [item(`${LIKES}?action=create`)], NOW)).toBeUndefined();
      expect(await store.find(BOB, APP)).toBeUndefined();
    });

    it("an approval gives back a permission taken back when it covers all of it, and leaves one it covers in part", async () => {
      await store.remember(ALICE, APP, granted("atproto", "transition:generic"), NOW);
      await store.withdraw(ALICE, APP, [item("repo:*?action=create"), item(`${LIKES}?action=delete`), item("identity:*")], NOW + 1);
      // Posts only: covers none of them whole.
      expect(await store.remember(ALICE, APP, granted("atproto", "repo:app.bsky.feed.post"), NOW + 2)).toEqual({ firstTime: false });
      expect((await store.find(ALICE, APP))?.withdrawn).toBe(`repo:*?action=create ${LIKES}?action=delete identity:*`);
      // Likes: covers deleting likes, not creating every kind of record.
      await store.remember(ALICE, APP, granted("atproto", LIKES), NOW + 3);
      expect((await store.find(ALICE, APP))?.withdrawn).toBe("repo:*?action=create identity:*");
      // transition:generic again: everything it covers is given back.
      await store.remember(ALICE, APP, granted("atproto", "transition:generic"), NOW + 4);
      expect((await store.find(ALICE, APP))?.withdrawn).toBe("");
    });

    it("the first approval of an app says so; later ones, and one after forgetting it, as the case is", async () => {
      expect(await store.remember(ALICE, APP, granted("atproto"), NOW)).toEqual({ firstTime: true });
      expect(await store.remember(ALICE, APP, granted("atproto", LIKES), NOW + 1)).toEqual({ firstTime: false });
      await store.forget(ALICE, APP);
      expect(await store.remember(ALICE, APP, granted("atproto"), NOW + 2)).toEqual({ firstTime: true });
    });
  });
}
