import { beforeEach, describe, expect, it } from "vitest";
import { FIXTURE_TIME, newCode } from "../../../../tests/helpers/store-fixtures.ts";
import type { RequestStore, StoredAuthorizationRequest } from "../../oauth/request/request-store.ts";
import type { GrantStore } from "../../oauth/token/grant-store.ts";

/** How long a pushed request lives unless its screen is shown. */
export const REQUEST_LIFETIME = 5 * 60_000;
/** How long an expired or answered request keeps its way back to the app (docs/decisions/0020). */
export const WAY_BACK_RETENTION = 24 * 60 * 60_000;
export const WAY_BACK = { clientId: "https://app.example/client-metadata.json", redirectUri: "https://app.example/callback", state: "state-ü-✓", responseMode: "query" } as const;

const LIFETIME = REQUEST_LIFETIME;
const RETENTION = WAY_BACK_RETENTION;

/** A pushed request of did:plc:alice's app, made at FIXTURE_TIME unless told otherwise. */
export function pushed(idHash: string, overrides: Partial<StoredAuthorizationRequest> = {}): StoredAuthorizationRequest {
  return {
    idHash,
    clientId: "https://app.example/client-metadata.json",
    parameters: {
      client_id: "https://app.example/client-metadata.json",
      redirect_uri: "https://app.example/callback",
      scope: "atproto include:com.example.calendar.authFull repo:com.example.calendar.event",
      state: "state-ü-✓",
      code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
      code_challenge_method: "S256",
      response_mode: "query",
      login_hint: "alice.test",
      permission_sets: [
        { include: "include:com.example.calendar.authFull", nsid: "com.example.calendar.authFull", title: "Calendar", scopes: ["repo:com.example.calendar.event"] },
      ],
    },
    dpopJkt: "jkt-of-the-app",
    clientKey: null,
    createdAt: FIXTURE_TIME,
    expiresAt: FIXTURE_TIME + LIFETIME,
    ...overrides,
  };
}

/**
 * A request store under test, empty, keeping ways back for WAY_BACK_RETENTION, beside the grant store its approved
 * requests' codes go to; the account did:plc:alice exists. `keptRequests` and `keptCodes` count what the two hold
 * (rows or map entries), so that lazy expiry is seen to remove what it promises.
 */
export type RequestStoreSubject = {
  store: RequestStore;
  codes: GrantStore;
  keptRequests(): Promise<number>;
  keptCodes(): Promise<number>;
};

/**
 * Pushed authorization requests (RFC 9126): lazy expiry, the way back kept after a shown screen, single use, the atomic
 * exchange for a code and the bound on one address's pending requests. Run on each SQL engine and on the memory store
 * the managers' unit tests use. What the SQL rows keep, batch cleanup and the races between connections stay in
 * sql-request-store.test.ts: one memory store has no second connection to race with.
 */
export function requestStoreContract(name: string, open: () => Promise<RequestStoreSubject>): void {
  describe(name, () => {
    let subject: RequestStoreSubject;
    let store: RequestStore;
    const now = FIXTURE_TIME;

    beforeEach(async () => {
      subject = await open();
      store = subject.store;
    });

    /** The request while it is live and unanswered; undefined once it is only a way back, or gone. */
    async function active(idHash: string, at: number): Promise<StoredAuthorizationRequest | undefined> {
      const found = await store.find(idHash, at);
      return found?.status === "active" ? found.request : undefined;
    }

    /** The screen was shown to `browser` at `at`, for the usual five more minutes. */
    async function shown(idHash: string, browser: string, at = now) {
      await store.show(idHash, { now: at, until: at + LIFETIME, browser, wayBack: WAY_BACK });
    }

    it("stores a request and finds it while live, parameters and client key as given", async () => {
      const request = pushed("req-a");
      const bound = pushed("req-b", { clientKey: { kid: "key-1", alg: "ES256", jkt: "thumbprint" } });
      await store.create(request);
      await store.create(bound);
      expect(await active("req-a", now)).toEqual(request);
      expect(await active("req-b", now + LIFETIME - 1)).toEqual(bound);
      expect(await active("req-unknown", now)).toBeUndefined();
    });

    it("a request_uri hash is stored once: creating it again fails and leaves the first as it was", async () => {
      const request = pushed("req-a");
      await store.create(request);
      await expect(store.create(pushed("req-a", { dpopJkt: "another-key" }))).rejects.toThrow();
      expect(await active("req-a", now)).toEqual(request);
    });

    it("a request whose screen was never shown keeps nothing once expired: absent, and its row deleted", async () => {
      await store.create(pushed("req-a"));
      expect(await store.find("req-a", now + LIFETIME)).toBeUndefined();
      expect(await subject.keptRequests()).toBe(0);
      // Answered without a screen (prompt=none): nothing to go back to either.
      await store.create(pushed("req-b"));
      expect(await store.consume("req-b", now)).toBe(true);
      expect(await store.find("req-b", now + 1)).toBeUndefined();
      expect(await subject.keptRequests()).toBe(0);
    });

    it("a shown request, once expired, keeps only its way back and the browser for the retention time, then is absent and deleted", async () => {
      await store.create(pushed("req-a"), { from: "192.0.2.1", max: 10 });
      await shown("req-a", "browser-a");
      const expiry = now + LIFETIME;
      expect(await store.find("req-a", expiry)).toEqual({ status: "expired", returnAddress: WAY_BACK, shownTo: "browser-a" });
      expect(await store.find("req-a", expiry + RETENTION - 1)).toEqual({ status: "expired", returnAddress: WAY_BACK, shownTo: "browser-a" });
      expect(await store.find("req-a", expiry + RETENTION)).toBeUndefined();
      expect(await subject.keptRequests()).toBe(0);
    });

    it("an answered request is found as answered, with its way back and the browser it was last shown to", async () => {
      await store.create(pushed("req-a"));
      await shown("req-a", "browser-a");
      await shown("req-a", "browser-b");
      expect(await store.consume("req-a", now)).toBe(true);
      expect(await store.find("req-a", now + 1)).toEqual({ status: "answered", returnAddress: WAY_BACK, shownTo: "browser-b" });
    });

    it("show pushes the expiry out, never earlier, and touches no request that was answered or expired", async () => {
      await store.create(pushed("req-a"));
      await store.show("req-a", { now, until: now + 2 * LIFETIME, browser: "browser-a", wayBack: WAY_BACK });
      expect((await active("req-a", now))?.expiresAt).toBe(now + 2 * LIFETIME);
      await store.show("req-a", { now, until: now + LIFETIME, browser: "browser-a", wayBack: WAY_BACK });
      expect((await active("req-a", now))?.expiresAt).toBe(now + 2 * LIFETIME);
      expect(await active("req-a", now + 2 * LIFETIME - 1)).toBeDefined();

      await store.create(pushed("req-b"));
      expect(await store.consume("req-b", now)).toBe(true);
      await store.show("req-b", { now, until: now + 10 * LIFETIME, browser: "browser-b", wayBack: WAY_BACK });
      // Answered before any screen: the late showing gave it no way back to be found by.
      expect(await store.find("req-b", now + 1)).toBeUndefined();
    });

    it("a request shrunk at expiry by one reader is never revived by a showing from a clock behind it: Allow then answers false, not a failure", async () => {
      await store.create(pushed("req-a"));
      await shown("req-a", "browser-a");
      // One process, its clock at the expiry, shrinks it; another, a second behind, had found it live and now shows it.
      expect(await store.find("req-a", now + LIFETIME)).toMatchObject({ status: "expired" });
      await store.show("req-a", { now: now + LIFETIME - 1000, until: now + 2 * LIFETIME, browser: "browser-a", wayBack: WAY_BACK });
      expect(await active("req-a", now + LIFETIME - 1000)).toBeUndefined();
      expect(await store.exchangeForCode("req-a", now + LIFETIME - 1000, newCode("code-a"))).toBe(false);
      expect(await subject.keptCodes()).toBe(0);
    });

    it("stores at most `max` waiting requests of one address, each refusal saying when to retry; an answered one no longer waits", async () => {
      for (let i = 0; i < 5; i++) expect(await store.create(pushed(`from-one-${i}`, { expiresAt: now + LIFETIME + i }), { from: "192.0.2.7", max: 5 })).toEqual({ created: true });
      expect(await store.create(pushed("from-one-5"), { from: "192.0.2.7", max: 5 })).toEqual({ created: false, retryAt: now + LIFETIME });
      expect(await active("from-one-5", now)).toBeUndefined();
      // Another address has its own room; an answered request no longer waits.
      expect(await store.create(pushed("from-another"), { from: "192.0.2.8", max: 5 })).toEqual({ created: true });
      expect(await store.consume("from-one-0", now)).toBe(true);
      expect(await store.create(pushed("from-one-6"), { from: "192.0.2.7", max: 5 })).toEqual({ created: true });
      // Once the waiting ones expire, the address has room again.
      expect(await store.create(pushed("later", { createdAt: now + 2 * LIFETIME, expiresAt: now + 3 * LIFETIME }), { from: "192.0.2.7", max: 5 })).toEqual({ created: true });
    });

    it("consumes a request once; a consumed or expired one is not active and cannot be consumed", async () => {
      await store.create(pushed("req-a"));
      expect(await store.consume("req-a", now)).toBe(true);
      expect(await store.consume("req-a", now)).toBe(false);
      expect(await active("req-a", now)).toBeUndefined();

      await store.create(pushed("req-b"));
      expect(await store.consume("req-b", now + LIFETIME)).toBe(false);
      expect(await store.consume("req-unknown", now)).toBe(false);
    });

    it("exchanges an approved request for its code in one step: the request is used up and the code stored", async () => {
      await store.create(pushed("req-a"));
      const code = newCode("code-a");
      expect(await store.exchangeForCode("req-a", now + 1_000, code)).toBe(true);
      expect(await active("req-a", now + 1_000)).toBeUndefined();
      expect(await subject.codes.findCode("code-a", now + 1_000)).toEqual({ ...code, usedAt: null, grantId: null });
      // Once used, neither another exchange nor a consume wins, and no second code appears.
      expect(await store.exchangeForCode("req-a", now + 2_000, newCode("code-b"))).toBe(false);
      expect(await store.consume("req-a", now + 2_000)).toBe(false);
      expect(await subject.codes.findCode("code-b", now + 2_000)).toBeUndefined();
    });

    it("a request consumed (denied) first cannot be exchanged for a code, nor an expired one", async () => {
      await store.create(pushed("req-a"));
      await store.consume("req-a", now);
      expect(await store.exchangeForCode("req-a", now, newCode("code-a"))).toBe(false);
      await store.create(pushed("req-b"));
      expect(await store.exchangeForCode("req-b", now + LIFETIME, newCode("code-b"))).toBe(false);
      expect(await subject.keptCodes()).toBe(0);
    });

    it("the exchange is all or nothing: when the code cannot be stored, the request stays unconsumed", async () => {
      await store.create(pushed("req-a"));
      await subject.codes.insertCode(newCode("taken"));
      await expect(store.exchangeForCode("req-a", now, newCode("taken"))).rejects.toThrow();
      expect(await active("req-a", now)).toBeDefined();
      expect(await store.exchangeForCode("req-a", now, newCode("code-a"))).toBe(true);
    });
  });
}
