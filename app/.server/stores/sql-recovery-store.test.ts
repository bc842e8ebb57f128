import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ENGINES, execute, openTestDatabase, rowOf, type TestDatabase, raceOn } from "../../../tests/helpers/databases.ts";
import { untilASessionWaitsForALock } from "../../../tests/helpers/postgres.ts";
import type { PostgresDatabase } from "../db/postgres-database.ts";
import { at, sql, statementOf } from "../db/sql.ts";
import { SqlRecoveryStore } from "./sql-recovery-store.ts";

/**
 * The recovery store's contract (docs/decisions/0020), on each engine: codes stored hashed, the newest one per
 * account, single use even when redemptions race in several processes, the reset and the lockdown in the same
 * transaction, lazy expiry.
 */
describe.each(ENGINES)("SqlRecoveryStore on %s", (engine) => {
  let test: TestDatabase;
  let store: SqlRecoveryStore;
  const T = 1_700_000_000_000;
  const ALICE = "did:plc:alice";
  const RESET = { passwordHash: "scrypt$new", removePasskeys: false, disconnectApps: false };

  beforeEach(async () => {
    test = await openTestDatabase(engine);
    store = new SqlRecoveryStore(test.db);
    await execute(test.db, sql`INSERT INTO "Account" ("did", "handle", "email", "passwordHash", "signingKey", "createdAt", "updatedAt")
      VALUES (${ALICE}, 'alice.test', 'alice@example.com', 'scrypt$old', '{}', ${at(T)}, ${at(T)})`);
    for (const id of ["s1", "s2"]) {
      await execute(test.db, sql`INSERT INTO "BrowserSession" ("idHash", "accountDid", "createdAt", "lastSeenAt", "expiresAt", "staySignedIn")
        VALUES (${id}, ${ALICE}, ${at(T)}, ${at(T)}, ${at(T + 3_600_000)}, ${true})`);
    }
    await execute(test.db, sql`INSERT INTO "Passkey" ("credentialId", "accountDid", "name", "publicKey", "counter", "deviceType", "backedUp", "createdAt")
      VALUES ('cred-1', ${ALICE}, 'Phone', ${new Uint8Array([1, 2, 3])}, 0, 'multiDevice', ${true}, ${at(T)})`);
  });
  afterEach(() => test.close());

  const count = async (table: "RecoveryCode" | "BrowserSession" | "Passkey") =>
    (await rowOf<{ n: number | string }>(test.db, statementOf(`SELECT COUNT(*) AS "n" FROM "${table}"`)()))!.n;
  const issue = (codeHash: string, createdAt = T, lifetime = 15 * 60_000) => store.issue({ codeHash, accountDid: ALICE, createdAt, expiresAt: createdAt + lifetime });
  const passwordHash = async () => (await rowOf<{ passwordHash: string }>(test.db, sql`SELECT "passwordHash" FROM "Account" WHERE "did" = ${ALICE}`))!.passwordHash;

  it("finds a live code; redeeming sets the password and ends every session, once", async () => {
    await issue("hash-1");
    expect(await store.find("hash-1", T + 1000)).toBe(ALICE);
    expect(await store.redeem("hash-1", T + 1000, RESET)).toEqual({ accountDid: ALICE, sessions: 2, passkeys: 0, apps: 0 });
    expect(await passwordHash()).toBe("scrypt$new");
    expect(Number(await count("BrowserSession"))).toBe(0);
    expect(Number(await count("Passkey"))).toBe(1);
    expect(await store.find("hash-1", T + 2000)).toBeUndefined();
    expect(await store.redeem("hash-1", T + 2000, { ...RESET, passwordHash: "scrypt$again" })).toBeUndefined();
    expect(await passwordHash()).toBe("scrypt$new");
  });

  it("a reset by the link spends the code emailed with it (docs/decisions/0030)", async () => {
    await issue("hash-1");
    await execute(test.db, sql`INSERT INTO "TypedCode" ("accountDid", "purpose", "codeHash", "guesses", "createdAt", "expiresAt")
      VALUES (${ALICE}, 'recovery', 'typed', 0, ${at(T)}, ${at(T + 15 * 60_000)}), (${ALICE}, 'account-deletion', 'other', 0, ${at(T)}, ${at(T + 15 * 60_000)})`);
    await store.redeem("hash-1", T + 1000, RESET);
    const left = await rowOf<{ purposes: string }>(test.db, sql`SELECT MIN("purpose") AS "purposes" FROM "TypedCode"`);
    expect(left?.purposes).toBe("account-deletion");
  });

  it("removes the passkeys when asked, in the same step", async () => {
    await issue("hash-1");
    expect(await store.redeem("hash-1", T + 1000, { ...RESET, removePasskeys: true, disconnectApps: true })).toMatchObject({ passkeys: 1 });
    expect(Number(await count("Passkey"))).toBe(0);
  });

  it("an expired or unknown code changes nothing", async () => {
    await issue("hash-1");
    expect(await store.find("hash-1", T + 15 * 60_000)).toBeUndefined();
    expect(await store.redeem("hash-1", T + 15 * 60_000, RESET)).toBeUndefined();
    expect(await store.redeem("never-issued", T, RESET)).toBeUndefined();
    expect(await passwordHash()).toBe("scrypt$old");
    expect(Number(await count("BrowserSession"))).toBe(2);
  });

  it("only the account's newest code works", async () => {
    await issue("hash-1");
    await issue("hash-2", T + 1000);
    expect(await store.find("hash-1", T + 2000)).toBeUndefined();
    expect(await store.find("hash-2", T + 2000)).toBe(ALICE);
  });

  it("expired codes are deleted a few at a time by later steps (lazy expiry)", async () => {
    for (let i = 0; i < 5; i++) {
      await execute(test.db, sql`INSERT INTO "RecoveryCode" ("codeHash", "accountDid", "createdAt", "expiresAt") VALUES (${`old-${i}`}, ${ALICE}, ${at(T - 2)}, ${at(T - 1)})`);
    }
    await store.prune(T);
    expect(Number(await count("RecoveryCode"))).toBe(0);
  });

  it(`race: ten redemptions of one code ${raceOn(engine, 2)}, spend it exactly once`, async () => {
    await issue("hash-race");
    const other = new SqlRecoveryStore(test.connect());
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? other : store).redeem("hash-race", T + 1000, { ...RESET, passwordHash: `scrypt$${i}` })),
    );
    const winners = results.filter((result) => result !== undefined);
    expect(winners).toHaveLength(1);
    const winner = results.findIndex((result) => result !== undefined);
    expect(await passwordHash()).toBe(`scrypt$${winner}`);
  });
  if (engine === "postgresql") {
    it("a reset waits for a sign-in holding the credentials lock before it touches the account's row (no deadlock with that sign-in)", async () => {
      // A sign-in takes the credentials lock, then writes the account's row (lastSignInAt: SqlSessionStore.create). A
      // reset that wrote the row first and then asked for the lock deadlocked with it: PostgreSQL aborted one, the
      // retries lost again under a stream of sign-ins, and the reset answered 500 (password-recovery.test.ts, once).
      await issue("hash-1");
      const signIn = await (test.db as PostgresDatabase).pool.connect();
      try {
        await signIn.query("BEGIN");
        await signIn.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`account-credentials:${ALICE}`]);
        let settled = false;
        const redeeming = store.redeem("hash-1", T + 1000, RESET).finally(() => (settled = true));
        await untilASessionWaitsForALock(signIn, () => settled);
        // The sign-in goes on to the account's row: the reset, waiting for the lock, must not hold it.
        const row = await signIn.query(`SELECT 1 FROM "Account" WHERE "did" = $1 FOR UPDATE NOWAIT`, [ALICE]).then(
          () => "free",
          (error: { code?: string }) => `held (${error.code})`,
        );
        await signIn.query(row === "free" ? "COMMIT" : "ROLLBACK");
        expect(row).toBe("free");
        expect(await redeeming).toMatchObject({ accountDid: ALICE });
      } finally {
        signIn.release();
      }
    });
  }

  it(`race: twenty links asked for ${raceOn(engine, 4)}: exactly one works afterwards`, async () => {
    const stores = [store, ...Array.from({ length: 3 }, () => new SqlRecoveryStore(test.connect()))];
    await Promise.all(Array.from({ length: 20 }, (_, i) => stores[i % 4]!.issue({ codeHash: `hash-${i}`, accountDid: ALICE, createdAt: T, expiresAt: T + 15 * 60_000 })));
    expect(Number(await count("RecoveryCode"))).toBe(1);
    const live = await Promise.all(Array.from({ length: 20 }, (_, i) => store.find(`hash-${i}`, T + 1000)));
    expect(live.filter((found) => found !== undefined)).toEqual([ALICE]);
  });
});
