import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ENGINES, execute, openTestDatabase, raceOn, rowOf, type TestDatabase } from "../../../tests/helpers/databases.ts";
import type { CodePurpose, StoredTypedCode } from "../accounts/typed-code-store.ts";
import { at, sql } from "../db/sql.ts";
import { SqlTypedCodeStore } from "./sql-typed-code-store.ts";

/**
 * The typed-code store's contract (docs/decisions/0030), on each engine: one code per (account, purpose), the newest;
 * a guess counter that no number of racing guesses passes; single use; purposes apart; lazy expiry.
 */
describe.each(ENGINES)("SqlTypedCodeStore on %s", (engine) => {
  let test: TestDatabase;
  let store: SqlTypedCodeStore;
  const T = 1_700_000_000_000;
  const ALICE = "did:plc:alice";
  const BOB = "did:plc:bob";
  const MAX = 5;

  beforeEach(async () => {
    test = await openTestDatabase(engine);
    store = new SqlTypedCodeStore(test.db);
    for (const [did, handle] of [[ALICE, "alice"], [BOB, "bob"]] as const) {
      await execute(test.db, sql`INSERT INTO "Account" ("did", "handle", "email", "passwordHash", "signingKey", "createdAt", "updatedAt")
        VALUES (${did}, ${`${handle}.test`}, ${`${handle}@example.com`}, 'scrypt$old', '{}', ${at(T)}, ${at(T)})`);
    }
  });
  afterEach(() => test.close());

  const code = (over: Partial<StoredTypedCode> = {}): StoredTypedCode => ({
    accountDid: ALICE, purpose: "recovery", codeHash: "right", detail: null, createdAt: T, expiresAt: T + 15 * 60_000, ...over,
  });
  const guess = (codeHash: string, over: { accountDid?: string; purpose?: CodePurpose; now?: number } = {}, on = store) =>
    on.guess({ accountDid: ALICE, purpose: "recovery", codeHash, now: T + 1000, maxGuesses: MAX, ...over });
  const guesses = async () => Number((await rowOf<{ guesses: number }>(test.db, sql`SELECT "guesses" FROM "TypedCode" WHERE "accountDid" = ${ALICE}`))?.guesses);

  it("a right guess spends the code, with its detail; a second one finds nothing", async () => {
    await store.issue(code({ detail: "new@example.com" }));
    expect(await store.findLive(ALICE, "recovery", T + 1000, MAX)).toEqual({ detail: "new@example.com" });
    expect(await guess("right")).toEqual({ kind: "spent", detail: "new@example.com" });
    expect(await guess("right")).toEqual({ kind: "none" });
    expect(await store.findLive(ALICE, "recovery", T + 1000, MAX)).toBeUndefined();
  });

  it("wrong guesses count; after the last one even the right code is refused", async () => {
    await store.issue(code());
    for (let i = 0; i < MAX - 1; i++) expect(await guess("wrong")).toEqual({ kind: "wrong" });
    expect(await guess("wrong")).toEqual({ kind: "wrong" });
    expect(await guesses()).toBe(MAX);
    expect(await guess("right")).toEqual({ kind: "none" });
    expect(await store.findLive(ALICE, "recovery", T + 1000, MAX)).toBeUndefined();
  });

  it("the right code after a few wrong guesses still works", async () => {
    await store.issue(code());
    for (let i = 0; i < MAX - 1; i++) await guess("wrong");
    expect(await guess("right")).toEqual({ kind: "spent", detail: null });
  });

  it("an expired code is refused", async () => {
    await store.issue(code());
    expect(await guess("right", { now: T + 15 * 60_000 })).toEqual({ kind: "none" });
  });

  it("a code works only for its purpose and its account", async () => {
    await store.issue(code({ purpose: "account-deletion" }));
    expect(await guess("right", { purpose: "recovery" })).toEqual({ kind: "none" });
    expect(await guess("right", { purpose: "email-update" })).toEqual({ kind: "none" });
    expect(await guess("right", { accountDid: BOB, purpose: "account-deletion" })).toEqual({ kind: "none" });
    expect(await guess("right", { purpose: "account-deletion" })).toEqual({ kind: "spent", detail: null });
  });

  it("only the newest code of an (account, purpose) works, with a fresh counter; other purposes keep theirs", async () => {
    await store.issue(code({ codeHash: "first" }));
    await store.issue(code({ purpose: "email-update", codeHash: "other" }));
    await guess("wrong");
    await store.issue(code({ codeHash: "second", createdAt: T + 10 }));
    expect(await guesses()).toBe(0);
    expect(await guess("first")).toEqual({ kind: "wrong" });
    expect(await guess("second")).toEqual({ kind: "spent", detail: null });
    expect(await guess("other", { purpose: "email-update" })).toEqual({ kind: "spent", detail: null });
  });

  it("expired codes are deleted a few at a time by later issues (lazy expiry)", async () => {
    await store.issue(code({ accountDid: BOB, createdAt: T - 2000, expiresAt: T - 1000 }));
    await store.issue(code());
    const left = await rowOf<{ n: number | string }>(test.db, sql`SELECT COUNT(*) AS "n" FROM "TypedCode"`);
    expect(Number(left!.n)).toBe(1);
  });

  it(`race: forty wrong guesses ${raceOn(engine, 4)} compare at most ${MAX}`, async () => {
    await store.issue(code());
    const stores = [store, ...Array.from({ length: 3 }, () => new SqlTypedCodeStore(test.connect()))];
    const outcomes = await Promise.all(Array.from({ length: 40 }, (_, i) => guess(`wrong-${i}`, {}, stores[i % 4])));
    expect(outcomes.filter((outcome) => outcome.kind === "wrong")).toHaveLength(MAX);
    expect(await guesses()).toBe(MAX);
    expect(await guess("right")).toEqual({ kind: "none" });
  });

  it(`race: ten right guesses ${raceOn(engine, 4)} spend the code once`, async () => {
    await store.issue(code());
    const stores = [store, ...Array.from({ length: 3 }, () => new SqlTypedCodeStore(test.connect()))];
    const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => guess("right", {}, stores[i % 4])));
    expect(outcomes.filter((outcome) => outcome.kind === "spent")).toHaveLength(1);
  });

  it(`race: twenty issues ${raceOn(engine, 4)} leave one code`, async () => {
    const stores = [store, ...Array.from({ length: 3 }, () => new SqlTypedCodeStore(test.connect()))];
    await Promise.all(Array.from({ length: 20 }, (_, i) => stores[i % 4]!.issue(code({ codeHash: `hash-${i}` }))));
    const rows = await rowOf<{ n: number | string }>(test.db, sql`SELECT COUNT(*) AS "n" FROM "TypedCode"`);
    expect(Number(rows!.n)).toBe(1);
    const kept = (await rowOf<{ codeHash: string }>(test.db, sql`SELECT "codeHash" FROM "TypedCode"`))!.codeHash;
    expect(kept).toMatch(/^hash-\d+$/);
    expect(await guesses()).toBe(0);
    expect(await guess(kept)).toEqual({ kind: "spent", detail: null });
  });
});
