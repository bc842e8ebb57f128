import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ENGINES, execute, openTestDatabase, raceOn, rowOf, type TestDatabase } from "../../../tests/helpers/databases.ts";
import type { Guess } from "../accounts/typed-code-store.ts";
import { at, sql } from "../db/sql.ts";
import { SqlEmailUpdateStore } from "./sql-email-update-store.ts";
import { SqlTypedCodeStore } from "./sql-typed-code-store.ts";

/**
 * The email-update store's contract (docs/decisions/0030), on each engine: the code sent to the new address sets it,
 * once; a wrong code changes nothing; an address another account holds is refused; two accounts confirming one
 * address at once: exactly one gets it.
 */
describe.each(ENGINES)("SqlEmailUpdateStore on %s", (engine) => {
  let test: TestDatabase;
  let store: SqlEmailUpdateStore;
  let codes: SqlTypedCodeStore;
  const T = 1_700_000_000_000;
  const NAMES = ["alice", "bob", "carol", "dave"];
  const did = (name: string) => `did:plc:${name}`;

  beforeEach(async () => {
    test = await openTestDatabase(engine);
    store = new SqlEmailUpdateStore(test.db);
    codes = new SqlTypedCodeStore(test.db);
    for (const name of NAMES) {
      await execute(test.db, sql`INSERT INTO "Account" ("did", "handle", "email", "passwordHash", "signingKey", "createdAt", "updatedAt")
        VALUES (${did(name)}, ${`${name}.test`}, ${`${name}@example.com`}, 'scrypt$x', '{}', ${at(T)}, ${at(T)})`);
    }
  });
  afterEach(() => test.close());

  const issue = (name: string, email: string) =>
    codes.issue({ accountDid: did(name), purpose: "email-update", codeHash: `code-${name}`, detail: email, createdAt: T, expiresAt: T + 15 * 60_000 });
  const guess = (name: string, codeHash = `code-${name}`): Guess => ({ accountDid: did(name), purpose: "email-update", codeHash, now: T + 1000, maxGuesses: 5 });
  const emailOf = async (name: string) => (await rowOf<{ email: string; emailConfirmedAt: unknown }>(test.db, sql`SELECT "email", "emailConfirmedAt" FROM "Account" WHERE "did" = ${did(name)}`))!;

  it("the right code sets the new address, confirmed, once", async () => {
    await issue("alice", "alice@new.example");
    expect(await store.confirm(guess("alice"))).toEqual({ kind: "updated", previous: "alice@example.com", email: "alice@new.example" });
    const row = await emailOf("alice");
    expect(row.email).toBe("alice@new.example");
    expect(row.emailConfirmedAt).not.toBeNull();
    expect(await store.confirm(guess("alice"))).toEqual({ kind: "invalid" });
  });

  it("what was mailed to the old address stops working: recovery links and codes, a deletion code", async () => {
    await execute(test.db, sql`INSERT INTO "RecoveryCode" ("codeHash", "accountDid", "createdAt", "expiresAt") VALUES ('link', ${did("alice")}, ${at(T)}, ${at(T + 60_000)})`);
    for (const purpose of ["recovery", "account-deletion"] as const) {
      await codes.issue({ accountDid: did("alice"), purpose, codeHash: "old", detail: null, createdAt: T, expiresAt: T + 15 * 60_000 });
    }
    await issue("alice", "alice@new.example");
    expect(await store.confirm(guess("alice"))).toMatchObject({ kind: "updated" });
    expect(await rowOf(test.db, sql`SELECT "codeHash" FROM "RecoveryCode" WHERE "accountDid" = ${did("alice")}`)).toBeUndefined();
    expect(await rowOf(test.db, sql`SELECT "purpose" FROM "TypedCode" WHERE "accountDid" = ${did("alice")}`)).toBeUndefined();
  });

  it("a wrong code, or a code of another purpose, changes nothing", async () => {
    await issue("alice", "alice@new.example");
    expect(await store.confirm(guess("alice", "wrong"))).toEqual({ kind: "invalid" });
    await codes.issue({ accountDid: did("bob"), purpose: "account-deletion", codeHash: "code-bob", detail: null, createdAt: T, expiresAt: T + 15 * 60_000 });
    expect(await store.confirm(guess("bob"))).toEqual({ kind: "invalid" });
    expect((await emailOf("alice")).email).toBe("alice@example.com");
    expect((await emailOf("bob")).email).toBe("bob@example.com");
  });

  it("an address another account holds is refused", async () => {
    await issue("alice", "bob@example.com");
    expect(await store.confirm(guess("alice"))).toEqual({ kind: "taken", email: "bob@example.com" });
    expect((await emailOf("alice")).email).toBe("alice@example.com");
  });

  it(`race: four accounts confirm one address ${raceOn(engine, 4)}: exactly one gets it`, async () => {
    for (const name of NAMES) await issue(name, "shared@example.com");
    const stores = [store, ...Array.from({ length: 3 }, () => new SqlEmailUpdateStore(test.connect()))];
    const outcomes = await Promise.all(NAMES.map((name, i) => stores[i]!.confirm(guess(name))));
    expect(outcomes.filter((outcome) => outcome.kind === "updated")).toHaveLength(1);
    expect(outcomes.filter((outcome) => outcome.kind === "taken")).toHaveLength(3);
    const holders = await rowOf<{ n: number | string }>(test.db, sql`SELECT COUNT(*) AS "n" FROM "Account" WHERE "email" = 'shared@example.com'`);
    expect(Number(holders!.n)).toBe(1);
  });
});
