import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, execute, rowOf, raceOn } from "../../../tests/helpers/databases.ts";
import { raceAgainstHeldWrite } from "../../../tests/helpers/postgres.ts";
import { countOf, countRows, FIXTURE_TIME, insertAccount, issuedTokens, newCode, newGrant, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import type { PostgresDatabase } from "../db/postgres-database.ts";
import { at, sql, type Database } from "../db/sql.ts";
import type { GrantStore } from "../oauth/token/grant-store.ts";
import { grantStoreContract, type GrantStoreSubject } from "./contracts/grant-store-contract.ts";
import { SqlGrantStore } from "./sql-grant-store.ts";

const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
const DAY = 86_400_000;

/** The grant store with the contract's two accounts, counted in its tables. */
async function sqlGrantStore(db: Database): Promise<GrantStoreSubject> {
  await insertAccount(db, ALICE);
  await insertAccount(db, BOB);
  return {
    store: new SqlGrantStore(db),
    kept: (table) => countRows(db, table),
    tokensOf: async (grantId) => ({
      access: await countOf(db, sql`SELECT COUNT(*) AS "n" FROM "AccessToken" WHERE "grantId" = ${grantId}`),
      refresh: await countOf(db, sql`SELECT COUNT(*) AS "n" FROM "RefreshToken" WHERE "grantId" = ${grantId}`),
    }),
  };
}

/**
 * The grant store on each engine: the contract every grant store keeps (contracts/grant-store-contract.ts, also run on
 * the memory store in tests/helpers/memory-stores.test.ts), then what only the SQL store does: batch cleanup, the
 * foreign keys' cascade, how times are stored, and races between connections (docs/decisions/0017).
 */
describe.each(ENGINES)("SqlGrantStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);

  grantStoreContract("the GrantStore contract", () => sqlGrantStore(shared.db));

  describe("what only the SQL store does", () => {
    let store: GrantStore;
    let tokensOf: GrantStoreSubject["tokensOf"];
    const now = FIXTURE_TIME;

    beforeEach(async () => {
      ({ store, tokensOf } = await sqlGrantStore(shared.db));
    });

    /** A redeemed code's grant with its first token pair ("<id>-1"). */
    const grantWithTokens = async (id: string, overrides: Parameters<typeof newGrant>[1] = {}, tokens = issuedTokens(`${id}-1`, overrides.createdAt ?? now)) => {
      const grant = newGrant(id, overrides);
      await store.insertCode(newCode(`code-${id}`, { accountDid: grant.accountDid, clientId: grant.clientId, createdAt: grant.createdAt, expiresAt: grant.createdAt + 60_000 }));
      expect(await store.redeemCode(`code-${id}`, grant.createdAt, grant, tokens)).toBe(true);
      return grant;
    };

    it("inserting a code removes a batch of expired ones", async () => {
      for (let i = 0; i < 25; i++) await store.insertCode(newCode(`old-${i}`, { createdAt: now - 120_000, expiresAt: now - 60_000 }));
      await store.insertCode(newCode("fresh"));
      // 20 of the 25 expired codes went; the new one is there.
      expect(await countRows(shared.db, "AuthorizationCode")).toBe(6);
    });

    it(`RACE: 40 redemptions of one code ${raceOn(engine, 4)}: exactly one grant`, async () => {
      await store.insertCode(newCode("contested"));
      const stores = shared.others(4).map((db) => new SqlGrantStore(db));
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) => stores[i % 4]!.redeemCode("contested", now + 1_000, newGrant(`grant-${i}`), issuedTokens(`${i}`, now + 1_000))),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = results.findIndex(Boolean);
      expect(await countRows(shared.db, "Grant")).toBe(1);
      expect(await countRows(shared.db, "AccessToken")).toBe(1);
      expect(await countRows(shared.db, "RefreshToken")).toBe(1);
      expect(await store.findCode("contested", now + 1_000)).toMatchObject({ grantId: `grant-${winner}` });
      expect((await store.findAccessToken(`access-${winner}`, now + 1_000))?.grant.id).toBe(`grant-${winner}`);
    });

    it(`RACE: 40 rotations of one refresh token ${raceOn(engine, 4)}: exactly one new pair`, async () => {
      await grantWithTokens("g");
      const stores = shared.others(4).map((db) => new SqlGrantStore(db));
      const later = now + DAY;
      const results = await Promise.all(Array.from({ length: 40 }, (_, i) => stores[i % 4]!.rotateRefreshToken("refresh-g-1", "g", later, issuedTokens(`r${i}`, later))));
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await tokensOf("g")).toEqual({ access: 1, refresh: 2 });
      expect(await store.findAccessToken(`access-r${results.findIndex(Boolean)}`, later)).toBeDefined();
    });

    it("deleting the account ends its grants, tokens and codes (cascade)", async () => {
      await grantWithTokens("g");
      await store.insertCode(newCode("pending"));
      await execute(shared.db, sql`DELETE FROM "Account" WHERE "did" = ${ALICE}`);
      for (const table of ["Grant", "AccessToken", "RefreshToken", "AuthorizationCode"] as const) expect({ table, rows: await countRows(shared.db, table) }).toEqual({ table, rows: 0 });
    });

    it("times round-trip as epoch milliseconds, stored as each engine stores times", async () => {
      await grantWithTokens("g", { createdAt: now + 7 });
      const row = await rowOf<{ createdAt: number; endsAt: number }>(shared.db, sql`SELECT "createdAt", "endsAt" FROM "Grant" WHERE "id" = 'g'`);
      expect(row).toEqual({ createdAt: now + 7, endsAt: now + 7 + 30 * DAY });
      expect(await countOf(shared.db, sql`SELECT COUNT(*) AS "n" FROM "Grant" WHERE "createdAt" = ${at(now + 7)}`)).toBe(1);
    });
  });
});

/**
 * docs/decisions/0040, the lookup's own expiry: a refresh token's lookup that finds its grant expired deletes the grant.
 * A rotation of the grant's newest token by another process (whose clock had not yet reached the end) extends the grant
 * meanwhile; on PostgreSQL the lookup's DELETE waits for that row and re-checks only its own WHERE, so the grant's expiry
 * must be tested there, or the grant the rotation just extended, and the tokens it just issued, are deleted.
 */
describe("SqlGrantStore on postgresql: a refresh token's lookup racing the rotation that extends its grant", () => {
  const shared = useSharedDatabase("postgresql");

  it("RACE (two connections): the grant extended while the lookup waited to delete it stays", async () => {
    const { store } = await sqlGrantStore(shared.db);
    const grant = newGrant("g");
    await store.insertCode(newCode("code-g"));
    expect(await store.redeemCode("code-g", FIXTURE_TIME, grant, issuedTokens("g-1"))).toBe(true);
    await raceAgainstHeldWrite(
      shared.others(1)[0] as PostgresDatabase,
      // The rotation's extension of the grant (rotateRefreshToken's "extended"), not yet committed.
      (client) => client.query(`UPDATE "Grant" SET "expiresAt" = $1 WHERE "id" = 'g'`, [new Date(grant.expiresAt + 7 * DAY).toISOString()]),
      () => store.findRefreshToken("refresh-g-1", grant.expiresAt),
    );
    expect(await countOf(shared.db, sql`SELECT COUNT(*) AS "n" FROM "Grant" WHERE "id" = 'g'`)).toBe(1);
  });
});
