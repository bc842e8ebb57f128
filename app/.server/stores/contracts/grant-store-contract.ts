import { beforeEach, describe, expect, it } from "vitest";
import { FIXTURE_TIME, issuedTokens, newCode, newGrant } from "../../../../tests/helpers/store-fixtures.ts";
import type { ClientKeyBinding } from "../../oauth/client/client-manager.ts";
import type { GrantStore } from "../../oauth/token/grant-store.ts";

const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
const APP = "https://app.example/client-metadata.json";
const OTHER_APP = "https://other.example/client-metadata.json";
const KEY: ClientKeyBinding = { kid: "key-1", alg: "ES256", jkt: "thumbprint-of-key-1" };
const DAY = 86_400_000;

/** What a grant store keeps: the SQL tables' rows, the memory store's map entries. */
export type GrantRecords = "AuthorizationCode" | "Grant" | "AccessToken" | "RefreshToken";

/**
 * A grant store under test, empty, whose accounts did:plc:alice and did:plc:bob exist with the handles alice.test and
 * bob.test. `kept` and `tokensOf` count what the store holds, so that lazy expiry and revocation are seen to remove
 * what they promise, and nothing more.
 */
export type GrantStoreSubject = {
  store: GrantStore;
  kept(records: GrantRecords): Promise<number>;
  tokensOf(grantId: string): Promise<{ access: number; refresh: number }>;
};

/**
 * The grant store's contract (docs/architecture.md, "Tokens and codes"; docs/decisions/0002, 0010): codes, grants and
 * tokens, each single-use step won once. Run on each SQL engine and on the memory store the managers' unit tests use,
 * so that those tests prove something about the real stores. Races between connections stay in
 * sql-grant-store.test.ts: one memory store has no second connection to race with.
 */
export function grantStoreContract(name: string, open: () => Promise<GrantStoreSubject>): void {
  describe(name, () => {
    let subject: GrantStoreSubject;
    let store: GrantStore;
    const now = FIXTURE_TIME;

    beforeEach(async () => {
      subject = await open();
      store = subject.store;
    });

    /** A redeemed code's grant with its first token pair ("<id>-1"). */
    const grantWithTokens = async (id: string, overrides: Parameters<typeof newGrant>[1] = {}, tokens = issuedTokens(`${id}-1`, overrides.createdAt ?? now)) => {
      const grant = newGrant(id, overrides);
      await store.insertCode(newCode(`code-${id}`, { accountDid: grant.accountDid, clientId: grant.clientId, createdAt: grant.createdAt, expiresAt: grant.createdAt + 60_000 }));
      expect(await store.redeemCode(`code-${id}`, grant.createdAt, grant, tokens)).toBe(true);
      return grant;
    };
    const tokensOf = (grantId: string) => subject.tokensOf(grantId);
    const kept = (records: GrantRecords) => subject.kept(records);

    describe("codes", () => {
      it("stores a code and finds it unredeemed, every field as given, with or without a client key", async () => {
        const code = newCode("code-a");
        const bound = newCode("code-b", { clientKey: KEY, scope: "atproto" });
        await store.insertCode(code);
        await store.insertCode(bound);
        expect(await store.findCode("code-a", now)).toEqual({ ...code, usedAt: null, grantId: null });
        expect(await store.findCode("code-b", now)).toEqual({ ...bound, usedAt: null, grantId: null });
        expect(await store.findCode("code-unknown", now)).toBeUndefined();
      });

      it("an expired code is absent and its row deleted (lazy expiry); it is live until the millisecond before", async () => {
        await store.insertCode(newCode("code-a"));
        expect(await store.findCode("code-a", now + 59_999)).toBeDefined();
        expect(await store.findCode("code-a", now + 60_000)).toBeUndefined();
        expect(await kept("AuthorizationCode")).toBe(0);
      });

      it("redeems a code once: the code records its grant, and the grant and its first tokens exist", async () => {
        await store.insertCode(newCode("code-a", { clientKey: KEY }));
        const grant = newGrant("grant-a", { clientKey: KEY });
        expect(await store.redeemCode("code-a", now + 1_000, grant, issuedTokens("a"))).toBe(true);
        expect(await store.findCode("code-a", now + 1_000)).toMatchObject({ usedAt: now + 1_000, grantId: "grant-a" });
        expect(await store.findGrantByTokenHash("access-a")).toEqual(grant);
        expect(await tokensOf("grant-a")).toEqual({ access: 1, refresh: 1 });

        // A second redemption, whatever grant it brings, changes nothing.
        expect(await store.redeemCode("code-a", now + 2_000, newGrant("grant-b"), issuedTokens("b"))).toBe(false);
        expect(await kept("Grant")).toBe(1);
        expect(await store.findGrantByTokenHash("access-b")).toBeUndefined();
      });

      it("refuses an expired or unknown code", async () => {
        await store.insertCode(newCode("code-a"));
        expect(await store.redeemCode("code-a", now + 60_000, newGrant("grant-a"), issuedTokens("a"))).toBe(false);
        expect(await store.redeemCode("code-unknown", now, newGrant("grant-b"), issuedTokens("b"))).toBe(false);
        expect(await kept("Grant")).toBe(0);
        expect(await kept("AccessToken")).toBe(0);
      });
    });

    describe("refresh tokens", () => {
      it("finds a live refresh token with its grant", async () => {
        const grant = await grantWithTokens("g", { clientKey: KEY });
        expect(await store.findRefreshToken("refresh-g-1", now)).toEqual({ tokenHash: "refresh-g-1", expiresAt: now + 7 * DAY, usedAt: null, grant });
        expect(await store.findRefreshToken("refresh-unknown", now)).toBeUndefined();
      });

      it("an expired refresh token is absent and deleted; an ended grant is deleted with all its tokens", async () => {
        await grantWithTokens("short", {}, issuedTokens("short-1", now, { refreshExpiresAt: now + 1_000 }));
        expect(await store.findRefreshToken("refresh-short-1", now + 1_000)).toBeUndefined();
        expect(await tokensOf("short")).toEqual({ access: 1, refresh: 0 });
        expect(await kept("Grant")).toBe(1);

        await grantWithTokens("ended", { endsAt: now + 2_000 });
        expect(await store.findRefreshToken("refresh-ended-1", now + 2_000)).toBeUndefined();
        expect(await store.findGrantByTokenHash("access-ended-1")).toBeUndefined();
        expect(await tokensOf("ended")).toEqual({ access: 0, refresh: 0 });
      });

      it("rotates once: the old token is spent, the old access token ends, the new pair works, the grant slides", async () => {
        await grantWithTokens("g");
        const later = now + DAY;
        expect(await store.rotateRefreshToken("refresh-g-1", "g", later, issuedTokens("g-2", later))).toEqual({ withdrawn: "" });
        expect(await store.findRefreshToken("refresh-g-1", later)).toMatchObject({ usedAt: later });
        expect(await store.findAccessToken("access-g-1", later)).toBeUndefined();
        expect(await store.findAccessToken("access-g-2", later)).toMatchObject({ grant: { id: "g", lastUsedAt: later, expiresAt: later + 7 * DAY } });
        expect(await tokensOf("g")).toEqual({ access: 1, refresh: 2 });
        // Spent: a second rotation of the same token, or one naming another grant, does nothing.
        expect(await store.rotateRefreshToken("refresh-g-1", "g", later, issuedTokens("g-3", later))).toBeUndefined();
        expect(await store.rotateRefreshToken("refresh-g-2", "other-grant", later, issuedTokens("g-4", later))).toBeUndefined();
        expect(await tokensOf("g")).toEqual({ access: 1, refresh: 2 });
      });

      it("a rotation answers what the grant's holder took back, as it read the grant (docs/decisions/0053)", async () => {
        await grantWithTokens("g", { withdrawn: "repo:app.bsky.feed.like?action=create" });
        const later = now + DAY;
        expect(await store.rotateRefreshToken("refresh-g-1", "g", later, issuedTokens("g-2", later))).toEqual({ withdrawn: "repo:app.bsky.feed.like?action=create" });
        expect((await store.findAccessToken("access-g-2", later))?.grant.withdrawn).toBe("repo:app.bsky.feed.like?action=create");
      });

      it("refuses an expired refresh token", async () => {
        await grantWithTokens("g", {}, issuedTokens("g-1", now, { refreshExpiresAt: now + 1_000 }));
        expect(await store.rotateRefreshToken("refresh-g-1", "g", now + 1_000, issuedTokens("g-2", now + 1_000))).toBeUndefined();
      });

      it("a grant's expiry slides with each refresh but never past its absolute end", async () => {
        await grantWithTokens("g", { endsAt: now + 10 * DAY });
        const later = now + 5 * DAY;
        expect(await store.rotateRefreshToken("refresh-g-1", "g", later, issuedTokens("g-2", later))).toEqual({ withdrawn: "" });
        // The new refresh token would live to day 12; the grant ends on day 10.
        const found = await store.findRefreshToken("refresh-g-2", later);
        expect(found?.grant).toMatchObject({ expiresAt: now + 10 * DAY, endsAt: now + 10 * DAY, lastUsedAt: later });
        expect(await store.findRefreshToken("refresh-g-2", now + 10 * DAY)).toBeUndefined();
        expect(await kept("Grant")).toBe(0);
      });
    });

    describe("access tokens", () => {
      it("finds the owner of a live access token: grant, expiry, the account's handle and the grant's scope", async () => {
        const grant = await grantWithTokens("g", { scope: "atproto transition:generic" });
        expect(await store.findAccessToken("access-g-1", now)).toEqual({ grant, expiresAt: now + 3_600_000, handle: "alice.test", scope: "atproto transition:generic", accountState: "active" });
        expect(await store.findAccessToken("access-unknown", now)).toBeUndefined();
      });

      it("an access token issued for a narrower scope carries it; the grant keeps its own", async () => {
        await grantWithTokens("g", { scope: "atproto transition:generic" });
        await store.rotateRefreshToken("refresh-g-1", "g", now + 1, issuedTokens("g-2", now + 1, { accessScope: "atproto" }));
        const owner = await store.findAccessToken("access-g-2", now + 1);
        expect(owner).toMatchObject({ scope: "atproto", grant: { scope: "atproto transition:generic" } });
      });

      it("an expired access token, or one of an ended grant, is absent but its row stays for revocation", async () => {
        await grantWithTokens("g", { endsAt: now + 2 * 3_600_000 });
        expect(await store.findAccessToken("access-g-1", now + 3_600_000)).toBeUndefined();
        expect(await store.findGrantByTokenHash("access-g-1")).toMatchObject({ id: "g" });
        await grantWithTokens("h", { endsAt: now + 1_000 });
        expect(await store.findAccessToken("access-h-1", now + 1_000)).toBeUndefined();
        expect(await tokensOf("h")).toEqual({ access: 1, refresh: 1 });
      });

      it("finds the grant of an access or refresh token, spent ones too", async () => {
        const grant = await grantWithTokens("g");
        await store.rotateRefreshToken("refresh-g-1", "g", now, issuedTokens("g-2"));
        for (const hash of ["refresh-g-1", "refresh-g-2", "access-g-2"]) expect(await store.findGrantByTokenHash(hash)).toMatchObject({ id: grant.id, accountDid: ALICE });
        expect(await store.findGrantByTokenHash("access-g-1")).toBeUndefined(); // ended by the rotation
        expect(await store.findGrantByTokenHash("nothing")).toBeUndefined();
      });
    });

    describe("grants", () => {
      it("lists an account's live grants, most recently used first", async () => {
        await grantWithTokens("old", { createdAt: now - 3 * DAY });
        await grantWithTokens("used", { createdAt: now - 2 * DAY });
        await grantWithTokens("new", { createdAt: now - DAY });
        await grantWithTokens("expired", { createdAt: now - 10 * DAY });
        await grantWithTokens("bobs", { accountDid: BOB });
        await store.touchGrant("used", now);
        expect((await store.listGrants(ALICE, now)).map((grant) => grant.id)).toEqual(["used", "new", "old"]);
        expect((await store.listGrants(ALICE, now)).find((grant) => grant.id === "used")?.lastUsedAt).toBe(now);
      });

      it("revoking a grant ends its tokens (cascade), and only its own", async () => {
        await grantWithTokens("g");
        await grantWithTokens("h");
        await store.revokeGrant("g");
        expect(await store.findAccessToken("access-g-1", now)).toBeUndefined();
        expect(await store.findRefreshToken("refresh-g-1", now)).toBeUndefined();
        expect(await tokensOf("g")).toEqual({ access: 0, refresh: 0 });
        expect(await store.findAccessToken("access-h-1", now)).toBeDefined();
      });

      it("revokeClientGrants ends the account's grants to that app and its unredeemed codes, nothing else", async () => {
        await grantWithTokens("g1");
        await grantWithTokens("g2");
        await grantWithTokens("other-app", { clientId: OTHER_APP });
        await grantWithTokens("bobs", { accountDid: BOB });
        await store.insertCode(newCode("pending"));
        await store.insertCode(newCode("pending-other-app", { clientId: OTHER_APP }));
        await store.insertCode(newCode("pending-bob", { accountDid: BOB }));
        expect(await store.revokeClientGrants(ALICE, APP)).toBe(2);
        expect((await store.listGrants(ALICE, now)).map((grant) => grant.id)).toEqual(["other-app"]);
        expect(await tokensOf("g1")).toEqual({ access: 0, refresh: 0 });
        // The unredeemed code can no longer become a grant.
        expect(await store.findCode("pending", now)).toBeUndefined();
        expect(await store.redeemCode("pending", now, newGrant("late"), issuedTokens("late"))).toBe(false);
        expect(await store.findCode("pending-other-app", now)).toBeDefined();
        expect(await store.findCode("pending-bob", now)).toBeDefined();
        expect(await store.listGrants(BOB, now)).toHaveLength(1);
      });

      it("revokeAccountGrants ends every grant and code of the account, and no other account's", async () => {
        await grantWithTokens("g1");
        await grantWithTokens("other-app", { clientId: OTHER_APP });
        await grantWithTokens("bobs", { accountDid: BOB });
        await store.insertCode(newCode("pending"));
        expect(await store.revokeAccountGrants(ALICE)).toBe(2);
        expect(await store.listGrants(ALICE, now)).toEqual([]);
        expect(await store.findCode("pending", now)).toBeUndefined();
        expect(await store.listGrants(BOB, now)).toHaveLength(1);
      });
    });
  });
}
