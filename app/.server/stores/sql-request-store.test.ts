import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, rowOf, raceOn } from "../../../tests/helpers/databases.ts";
import { countRows, FIXTURE_TIME, insertAccount, newCode, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { sql } from "../db/sql.ts";
import type { StoredAuthorizationRequest } from "../oauth/request/request-store.ts";
import { SqlGrantStore } from "./sql-grant-store.ts";
import { SqlRequestStore } from "./sql-request-store.ts";

const ALICE = "did:plc:alice";
const LIFETIME = 5 * 60_000;
/** How long an expired or answered request keeps its way back to the app (docs/decisions/0020). */
const RETENTION = 24 * 60 * 60_000;

function pushed(idHash: string, overrides: Partial<StoredAuthorizationRequest> = {}): StoredAuthorizationRequest {
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

/** Pushed authorization requests (RFC 9126) on each engine: lazy expiry, single use, and the atomic exchange for a code. */
describe.each(ENGINES)("SqlRequestStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  let store: SqlRequestStore;
  let codes: SqlGrantStore;
  const now = FIXTURE_TIME;

  /** The request while it is live and unanswered; undefined once it is only a way back, or gone. */
  async function active(idHash: string, at: number): Promise<StoredAuthorizationRequest | undefined> {
    const found = await store.find(idHash, at);
    return found?.status === "active" ? found.request : undefined;
  }

  beforeEach(async () => {
    store = new SqlRequestStore(shared.db, RETENTION);
    codes = new SqlGrantStore(shared.db);
    await insertAccount(shared.db, ALICE);
  });

  it("stores a request and finds it while live, parameters and client key as given", async () => {
    const request = pushed("req-a");
    const bound = pushed("req-b", { clientKey: { kid: "key-1", alg: "ES256", jkt: "thumbprint" } });
    await store.create(request);
    await store.create(bound);
    expect(await active("req-a", now)).toEqual(request);
    expect(await active("req-b", now + LIFETIME - 1)).toEqual(bound);
    expect(await active("req-unknown", now)).toBeUndefined();
  });

  const WAY_BACK = { clientId: "https://app.example/client-metadata.json", redirectUri: "https://app.example/callback", state: "state-ü-✓", responseMode: "query" } as const;

  /** The screen was shown to `browser` at `at`, for the usual five more minutes. */
  async function shown(idHash: string, browser: string, at = now) {
    await store.show(idHash, { now: at, until: at + LIFETIME, browser, wayBack: WAY_BACK });
  }

  async function storedRow(idHash: string) {
    return rowOf<{ parameters: string | null; wayBack: string | null; shownTo: string | null; pushedFrom: string | null }>(
      shared.db,
      sql`SELECT "parameters", "wayBack", "shownTo", "pushedFrom" FROM "AuthorizationRequest" WHERE "idHash" = ${idHash}`,
    );
  }

  async function expiryOf(idHash: string) {
    return (await rowOf<{ expiresAt: number }>(shared.db, sql`SELECT "expiresAt" FROM "AuthorizationRequest" WHERE "idHash" = ${idHash}`))?.expiresAt;
  }

  it("a request whose screen was never shown keeps nothing once expired: absent, and its row deleted", async () => {
    await store.create(pushed("req-a"));
    expect(await store.find("req-a", now + LIFETIME)).toBeUndefined();
    expect(await countRows(shared.db, "AuthorizationRequest")).toBe(0);
    // Answered without a screen (prompt=none): nothing to go back to either.
    await store.create(pushed("req-b"));
    expect(await store.consume("req-b", now)).toBe(true);
    expect(await store.find("req-b", now + 1)).toBeUndefined();
    expect(await countRows(shared.db, "AuthorizationRequest")).toBe(0);
  });

  it("a shown request, once expired, keeps only its way back and the browser for the retention time, then is absent and deleted", async () => {
    await store.create(pushed("req-a"), { from: "192.0.2.1", max: 10 });
    await shown("req-a", "browser-a");
    const expiry = now + LIFETIME;
    expect(await store.find("req-a", expiry)).toEqual({ status: "expired", returnAddress: WAY_BACK, shownTo: "browser-a" });
    // Nothing but the way back stays: the scope, the PKCE challenge, the hint and the pushing address are gone.
    const row = await storedRow("req-a");
    expect(row?.parameters).toBeNull();
    expect(row?.pushedFrom).toBeNull();
    expect(JSON.parse(row!.wayBack!)).toEqual({ redirect_uri: "https://app.example/callback", state: "state-ü-✓", response_mode: "query" });
    expect(await store.find("req-a", expiry + RETENTION - 1)).toEqual({ status: "expired", returnAddress: WAY_BACK, shownTo: "browser-a" });
    expect(await store.find("req-a", expiry + RETENTION)).toBeUndefined();
    expect(await countRows(shared.db, "AuthorizationRequest")).toBe(0);
  });

  it("an answered request is found as answered, with its way back and the browser it was last shown to", async () => {
    await store.create(pushed("req-a"));
    await shown("req-a", "browser-a");
    await shown("req-a", "browser-b");
    expect(await store.consume("req-a", now)).toBe(true);
    expect(await store.find("req-a", now + 1)).toEqual({ status: "answered", returnAddress: WAY_BACK, shownTo: "browser-b" });
    expect((await storedRow("req-a"))?.parameters).toBeNull();
  });

  it("creating a request removes a batch of rows past their time: expired unshown ones at once, shown ones a day later", async () => {
    for (let i = 0; i < 10; i++) await store.create(pushed(`unshown-${i}`, { createdAt: now - 2 * LIFETIME, expiresAt: now - LIFETIME }));
    for (let i = 0; i < 10; i++) {
      await store.create(pushed(`shown-${i}`, { createdAt: now - 2 * LIFETIME, expiresAt: now - LIFETIME }));
      await shown(`shown-${i}`, "browser-a", now - 2 * LIFETIME);
    }
    await store.create(pushed("fresh"));
    // The unshown ten went; the shown ten, never read since they expired, keep only their way back for a day.
    expect(await countRows(shared.db, "AuthorizationRequest")).toBe(11);
    for (let i = 0; i < 10; i++) expect((await storedRow(`shown-${i}`))?.parameters).toBeNull();
    await store.create(pushed("next-day", { createdAt: now + RETENTION, expiresAt: now + RETENTION + LIFETIME }));
    expect(await countRows(shared.db, "AuthorizationRequest")).toBe(1);
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
    const row = await rowOf<{ expiresAt: number; shownTo: string | null }>(shared.db, sql`SELECT "expiresAt", "shownTo" FROM "AuthorizationRequest" WHERE "idHash" = 'req-b'`);
    expect(row).toEqual({ expiresAt: now + LIFETIME, shownTo: null });
  });

  it("a request shrunk at expiry by one reader is never revived by a showing from a clock behind it: Allow then answers false, not a failure", async () => {
    await store.create(pushed("req-a"));
    await shown("req-a", "browser-a");
    // One process, its clock at the expiry, shrinks it; another, a second behind, had found it live and now shows it.
    expect(await store.find("req-a", now + LIFETIME)).toMatchObject({ status: "expired" });
    await store.show("req-a", { now: now + LIFETIME - 1000, until: now + 2 * LIFETIME, browser: "browser-a", wayBack: WAY_BACK });
    expect(await active("req-a", now + LIFETIME - 1000)).toBeUndefined();
    expect(await expiryOf("req-a")).toBe(now + LIFETIME);
    expect(await store.exchangeForCode("req-a", now + LIFETIME - 1000, newCode("code-a"))).toBe(false);
    expect(await countRows(shared.db, "AuthorizationCode")).toBe(0);
  });

  it("RACE: showings and shrinks at expiry of one request at once, from four processes: never a revived request, never a failed Allow", async () => {
    const stores = shared.others(4).map((db) => new SqlRequestStore(db, RETENTION));
    for (let round = 0; round < 5; round++) {
      const id = `contested-${round}`;
      await store.create(pushed(id));
      await shown(id, "browser-a");
      const behind = now + LIFETIME - 1000;
      await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          i % 2 === 0 ? stores[i % 4]!.find(id, now + LIFETIME) : stores[i % 4]!.show(id, { now: behind, until: now + 2 * LIFETIME, browser: "browser-a", wayBack: WAY_BACK }),
        ),
      );
      // Whichever went first, the request is either live with all of its parameters or only its way back, and Allow
      // (at the clock behind) either issues a code with its scope or refuses; it never throws.
      const found = await store.find(id, behind);
      if (found?.status === "active") expect(found.request.parameters.code_challenge).toBe(pushed(id).parameters.code_challenge);
      else expect({ parameters: (await storedRow(id))?.parameters, expiresAt: await expiryOf(id) }).toEqual({ parameters: null, expiresAt: now + LIFETIME });
      const issued = await store.exchangeForCode(id, behind, newCode(`code-${round}`));
      expect(issued).toBe(found?.status === "active");
    }
  });

  it("RACE: 20 pushes from one address at once, from four processes, with room for 5: exactly 5 stored, each refusal saying when to retry", async () => {
    const stores = shared.others(4).map((db) => new SqlRequestStore(db, RETENTION));
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => stores[i % 4]!.create(pushed(`from-one-${i}`), { from: "192.0.2.7", max: 5 })));
    expect(results.filter((result) => result.created)).toHaveLength(5);
    expect(results.filter((result) => !result.created)).toEqual(Array.from({ length: 15 }, () => ({ created: false, retryAt: now + LIFETIME })));
    expect(await countRows(shared.db, "AuthorizationRequest")).toBe(5);
    // Another address has its own room; an answered request no longer waits.
    expect(await store.create(pushed("from-another"), { from: "192.0.2.8", max: 5 })).toEqual({ created: true });
    expect(await store.consume("from-one-0", now)).toBe(results[0]!.created);
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
    expect(await codes.findCode("code-a", now + 1_000)).toEqual({ ...code, usedAt: null, grantId: null });
    // Once used, neither another exchange nor a consume wins, and no second code appears.
    expect(await store.exchangeForCode("req-a", now + 2_000, newCode("code-b"))).toBe(false);
    expect(await store.consume("req-a", now + 2_000)).toBe(false);
    expect(await codes.findCode("code-b", now + 2_000)).toBeUndefined();
  });

  it("a request consumed (denied) first cannot be exchanged for a code, nor an expired one", async () => {
    await store.create(pushed("req-a"));
    await store.consume("req-a", now);
    expect(await store.exchangeForCode("req-a", now, newCode("code-a"))).toBe(false);
    await store.create(pushed("req-b"));
    expect(await store.exchangeForCode("req-b", now + LIFETIME, newCode("code-b"))).toBe(false);
    expect(await countRows(shared.db, "AuthorizationCode")).toBe(0);
  });

  it("the exchange is all or nothing: when the code cannot be stored, the request stays unconsumed", async () => {
    await store.create(pushed("req-a"));
    await codes.insertCode(newCode("taken"));
    await expect(store.exchangeForCode("req-a", now, newCode("taken"))).rejects.toThrow();
    expect(await active("req-a", now)).toBeDefined();
    expect(await store.exchangeForCode("req-a", now, newCode("code-a"))).toBe(true);
  });

  it(`RACE: 40 consumptions of one request ${raceOn(engine, 4)}: exactly one wins`, async () => {
    await store.create(pushed("contested"));
    const stores = shared.others(4).map((db) => new SqlRequestStore(db, RETENTION));
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => stores[i % 4]!.consume("contested", now)));
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it(`RACE: 40 exchanges of one request ${raceOn(engine, 4)}: exactly one code`, async () => {
    await store.create(pushed("contested"));
    const stores = shared.others(4).map((db) => new SqlRequestStore(db, RETENTION));
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => stores[i % 4]!.exchangeForCode("contested", now, newCode(`code-${i}`))));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await countRows(shared.db, "AuthorizationCode")).toBe(1);
    expect(await codes.findCode(`code-${results.indexOf(true)}`, now)).toBeDefined();
  });

  it("RACE: approvals and denials of one request at once: one answer wins, and a code exists only if it was the approval", async () => {
    await store.create(pushed("contested"));
    const stores = shared.others(4).map((db) => new SqlRequestStore(db, RETENTION));
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? stores[i % 4]!.exchangeForCode("contested", now, newCode(`code-${i}`)) : stores[i % 4]!.consume("contested", now))),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = results.indexOf(true);
    expect(await countRows(shared.db, "AuthorizationCode")).toBe(winner % 2 === 0 ? 1 : 0);
  });
});
