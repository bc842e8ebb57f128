import { describe, expect, it } from "vitest";
import { ENGINES, rowOf } from "../../../tests/helpers/databases.ts";
import { useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { at, run, sql } from "../db/sql.ts";
import { lockAccountData, lockBlobContent, lockCredentials, lockIdentifiers, lockSequencer } from "./locks.ts";

/**
 * stores/locks.ts: the locks transactions take together, in one order, checked by the driver on each engine. A
 * transaction that takes one out of order is refused before that lock is taken, and what it wrote is rolled back.
 */
describe.each(ENGINES)("the lock order on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const DID = "did:plc:lockorder";
  const insertAccount = () =>
    run(sql`INSERT INTO "Account" ("did", "handle", "email", "passwordHash", "signingKey", "createdAt", "updatedAt")
      VALUES (${DID}, 'lockorder.test', 'lockorder@example.com', 'scrypt$x', '{}', ${at(0)}, ${at(0)})`);
  const accounts = async () => (await rowOf<{ n: number }>(shared.db, sql`SELECT COUNT(*) AS "n" FROM "Account" WHERE "did" = ${DID}`))!.n;

  it("takes every lock in its order, each kind as often as needed", async () => {
    await shared.db.transaction(function* () {
      yield* lockIdentifiers("lockorder@example.com", "lockorder.test");
      yield* lockCredentials(DID);
      yield* lockAccountData(DID);
      yield* lockBlobContent("bafkone");
      yield* lockBlobContent("bafktwo");
      yield* insertAccount();
      yield* lockSequencer();
    });
    expect(Number(await accounts())).toBe(1);
  });

  it("takes a lock it holds already again after a higher one (it waits for nothing)", async () => {
    await shared.db.transaction(function* () {
      yield* lockCredentials(DID);
      yield* insertAccount();
      yield* lockAccountData(DID);
      yield* lockCredentials(DID);
    });
    expect(Number(await accounts())).toBe(1);
  });

  it.each([
    ["the credentials after the account's data", () => [lockAccountData(DID), lockCredentials(DID)] as const],
    ["an identifier after the credentials", () => [lockCredentials(DID), lockIdentifiers("lockorder.test")] as const],
    ["a blob's copy after the sequencer", () => [lockSequencer(), lockBlobContent("bafkone")] as const],
    // Between the two: a write to the account's row, which counts as its data lock (a reset once deadlocked so).
    ["the credentials after a write to the account's row", () => [lockIdentifiers("lockorder.test"), lockCredentials(DID)] as const],
  ] as const)("refuses %s, and keeps nothing the transaction wrote", async (_, locks) => {
    const [first, second] = locks();
    // Called inside a promise: SQLite's transaction throws at once, PostgreSQL's rejects.
    const attempt = Promise.resolve().then(() =>
      shared.db.transaction(function* () {
        yield* first;
        yield* insertAccount();
        yield* second;
      }),
    );
    await expect(attempt).rejects.toThrow(/^Lock order: /);
    expect(Number(await accounts())).toBe(0);
  });
});
