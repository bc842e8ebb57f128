import { describe, expect, it } from "vitest";
import { ENGINES } from "../../../tests/helpers/databases.ts";
import { raceAgainstGatedTransaction } from "../../../tests/helpers/postgres.ts";
import { GRACE_MS, RETENTION_MS } from "../../../tests/helpers/repositories.ts";
import { insertAccount, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import type { PostgresDatabase } from "../db/postgres-database.ts";
import { PERSONAL_DETAILS_PREF } from "../repo/preferences.ts";
import { SqlRepoStore } from "./sql-repo-store.ts";

const ALICE = "did:plc:alice";
const T = 1_800_000_000_000;
const SETTINGS = { blobGraceMs: GRACE_MS, eventRetentionMs: RETENTION_MS };
const birthDate = (date: string) => ({ $type: PERSONAL_DETAILS_PREF, birthDate: date });
const adultContent = (enabled: boolean) => ({ $type: "app.bsky.actor.defs#adultContentPref", enabled });

/** The preferences' write that keeps some stored types (the birth date, for an OAuth app: repo/preferences.ts), on each engine. */
describe.each(ENGINES)("SqlRepoStore.putPreferences on %s", (engine) => {
  const shared = useSharedDatabase(engine);

  it("replaces the preferences, except the stored ones of the kept types, which stay first as they were", async () => {
    await insertAccount(shared.db, ALICE);
    const store = new SqlRepoStore(shared.db, SETTINGS);
    await store.putPreferences(ALICE, [adultContent(true), birthDate("1990-01-01T00:00:00.000Z")], T);
    await store.putPreferences(ALICE, [adultContent(false)], T + 1, [PERSONAL_DETAILS_PREF]);
    expect(await store.getPreferences(ALICE)).toEqual([birthDate("1990-01-01T00:00:00.000Z"), adultContent(false)]);
    await store.putPreferences(ALICE, [adultContent(true)], T + 2);
    expect(await store.getPreferences(ALICE)).toEqual([adultContent(true)]);
    await store.putPreferences(ALICE, [], T + 3, [PERSONAL_DETAILS_PREF]);
    expect(await store.getPreferences(ALICE)).toEqual([]);
  });
});

describe("SqlRepoStore.putPreferences on postgresql, an app's write racing the account holder's", () => {
  const shared = useSharedDatabase("postgresql");

  it("RACE (two connections): an app's write that keeps the birth date, made while the holder sets a new one, keeps the new one", async () => {
    await insertAccount(shared.db, ALICE);
    const store = new SqlRepoStore(shared.db, SETTINGS);
    await store.putPreferences(ALICE, [birthDate("1990-01-01T00:00:00.000Z")], T);
    await raceAgainstGatedTransaction(
      shared.db as PostgresDatabase,
      // The holder's write (a full-access session keeps nothing), held open before its commit.
      (gated) => new SqlRepoStore(gated, SETTINGS).putPreferences(ALICE, [birthDate("2001-02-03T00:00:00.000Z")], T + 1),
      () => store.putPreferences(ALICE, [adultContent(false)], T + 2, [PERSONAL_DETAILS_PREF]),
    );
    expect(await store.getPreferences(ALICE)).toEqual([birthDate("2001-02-03T00:00:00.000Z"), adultContent(false)]);
  });
});
