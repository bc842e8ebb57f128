import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, rowOf, raceOn } from "../../../tests/helpers/databases.ts";
import { countRows, FIXTURE_TIME, insertAccount, newCode, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { sql, type Database } from "../db/sql.ts";
import type { GrantStore } from "../oauth/token/grant-store.ts";
import {
  pushed,
  REQUEST_LIFETIME as LIFETIME,
  requestStoreContract,
  WAY_BACK,
  WAY_BACK_RETENTION as RETENTION,
  type RequestStoreSubject,
} from "./contracts/request-store-contract.ts";
import { SqlGrantStore } from "./sql-grant-store.ts";
import { SqlRequestStore } from "./sql-request-store.ts";

const ALICE = "did:plc:alice";

/** The request store with the contract's account, beside the grant store on the same database, counted in its tables. */
async function sqlRequestStore(db: Database): Promise<RequestStoreSubject> {
  await insertAccount(db, ALICE);
  return {
    store: new SqlRequestStore(db, RETENTION),
    codes: new SqlGrantStore(db),
    keptRequests: () => countRows(db, "AuthorizationRequest"),
    keptCodes: () => countRows(db, "AuthorizationCode"),
  };
}

/**
 * Pushed authorization requests (RFC 9126) on each engine: the contract every request store keeps
 * (contracts/request-store-contract.ts, also run on the memory store in tests/helpers/memory-stores.test.ts), then
 * what only the SQL store does: what an expired or answered row still holds, batch cleanup, and the races between
 * connections (docs/decisions/0017, 0020, 0022).
 */
describe.each(ENGINES)("SqlRequestStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);

  requestStoreContract("the RequestStore contract", () => sqlRequestStore(shared.db));

  describe("what only the SQL store does", () => {
    let store: SqlRequestStore;
    let codes: GrantStore;
    const now = FIXTURE_TIME;

    beforeEach(async () => {
      ({ codes } = await sqlRequestStore(shared.db));
      store = new SqlRequestStore(shared.db, RETENTION);
    });

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

    it("the row of a shown request, once expired, keeps nothing but the way back: the scope, the PKCE challenge, the hint and the pushing address are gone", async () => {
      await store.create(pushed("req-a"), { from: "192.0.2.1", max: 10 });
      await shown("req-a", "browser-a");
      expect(await store.find("req-a", now + LIFETIME)).toMatchObject({ status: "expired" });
      const row = await storedRow("req-a");
      expect(row?.parameters).toBeNull();
      expect(row?.pushedFrom).toBeNull();
      expect(JSON.parse(row!.wayBack!)).toEqual({ redirect_uri: "https://app.example/callback", state: "state-ü-✓", response_mode: "query" });
    });

    it("the row of an answered request keeps no parameters", async () => {
      await store.create(pushed("req-a"));
      await shown("req-a", "browser-a");
      expect(await store.consume("req-a", now)).toBe(true);
      expect((await storedRow("req-a"))?.parameters).toBeNull();
    });

    it("a showing after the answer leaves the row as it was: no later expiry, no browser", async () => {
      await store.create(pushed("req-b"));
      expect(await store.consume("req-b", now)).toBe(true);
      await store.show("req-b", { now, until: now + 10 * LIFETIME, browser: "browser-b", wayBack: WAY_BACK });
      const row = await rowOf<{ expiresAt: number; shownTo: string | null }>(shared.db, sql`SELECT "expiresAt", "shownTo" FROM "AuthorizationRequest" WHERE "idHash" = 'req-b'`);
      expect(row).toEqual({ expiresAt: now + LIFETIME, shownTo: null });
    });

    it("a request shrunk at expiry keeps its expiry when a showing from a clock behind comes after", async () => {
      await store.create(pushed("req-a"));
      await shown("req-a", "browser-a");
      expect(await store.find("req-a", now + LIFETIME)).toMatchObject({ status: "expired" });
      await store.show("req-a", { now: now + LIFETIME - 1000, until: now + 2 * LIFETIME, browser: "browser-a", wayBack: WAY_BACK });
      expect(await expiryOf("req-a")).toBe(now + LIFETIME);
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
});
