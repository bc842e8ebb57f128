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

  it("an expired request keeps only its way back for the retention time, then is absent and its row deleted (lazy expiry)", async () => {
    await store.create(pushed("req-a"));
    const wayBack = { clientId: "https://app.example/client-metadata.json", redirectUri: "https://app.example/callback", state: "state-ü-✓", responseMode: "query" };
    expect(await store.find("req-a", now + LIFETIME)).toEqual({ status: "expired", returnAddress: wayBack });
    // Nothing but the way back stays: the scope, the PKCE challenge and the hint are gone from the row.
    const row = await rowOf<{ parameters: string }>(shared.db, sql`SELECT "parameters" FROM "AuthorizationRequest" WHERE "idHash" = 'req-a'`);
    expect(row?.parameters).not.toContain("calendar");
    expect(row?.parameters).not.toContain("alice.test");
    expect(await store.find("req-a", now + LIFETIME + RETENTION - 1)).toEqual({ status: "expired", returnAddress: wayBack });
    expect(await store.find("req-a", now + LIFETIME + RETENTION)).toBeUndefined();
    expect(await countRows(shared.db, "AuthorizationRequest")).toBe(0);
  });

  it("an answered request is found as answered, with its way back", async () => {
    await store.create(pushed("req-a"));
    expect(await store.consume("req-a", now)).toBe(true);
    expect(await store.find("req-a", now + 1)).toMatchObject({ status: "answered", returnAddress: { redirectUri: "https://app.example/callback", state: "state-ü-✓" } });
  });

  it("creating a request removes a batch of expired ones", async () => {
    for (let i = 0; i < 25; i++) await store.create(pushed(`old-${i}`, { createdAt: now - RETENTION - 2 * LIFETIME, expiresAt: now - RETENTION - LIFETIME }));
    await store.create(pushed("fresh"));
    expect(await countRows(shared.db, "AuthorizationRequest")).toBe(6);
  });

  it("extend pushes the expiry out, never earlier, and not for a consumed request", async () => {
    await store.create(pushed("req-a"));
    await store.extend("req-a", now + 2 * LIFETIME);
    expect((await active("req-a", now))?.expiresAt).toBe(now + 2 * LIFETIME);
    await store.extend("req-a", now + LIFETIME);
    expect((await active("req-a", now))?.expiresAt).toBe(now + 2 * LIFETIME);
    expect(await active("req-a", now + 2 * LIFETIME - 1)).toBeDefined();

    await store.create(pushed("req-b"));
    expect(await store.consume("req-b", now)).toBe(true);
    await store.extend("req-b", now + 10 * LIFETIME);
    const row = await rowOf<{ expiresAt: number }>(shared.db, sql`SELECT "expiresAt" FROM "AuthorizationRequest" WHERE "idHash" = 'req-b'`);
    expect(row?.expiresAt).toBe(now + LIFETIME);
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
