import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, execute, raceOn } from "../../../tests/helpers/databases.ts";
import { countRows, insertAccount, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { sql } from "../db/sql.ts";
import type { RecordWrite } from "../repo/repo-store.ts";
import { SqlRepoStore } from "./sql-repo-store.ts";

const NOW = 1_800_000_000_000;
const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
const POST = "app.bsky.feed.post";
const GRACE = 60_000;

const create = (rkey: string, text = rkey): RecordWrite => ({ action: "create", collection: POST, rkey, value: { $type: POST, text }, cid: `cid-${rkey}-${text}` });
const put = (rkey: string, text: string, swapCid?: string | null): RecordWrite => ({ ...create(rkey, text), action: "put", ...(swapCid === undefined ? {} : { swapCid }) }) as RecordWrite;
const update = (rkey: string, text: string): RecordWrite => ({ ...create(rkey, text), action: "update" }) as RecordWrite;
const remove = (rkey: string, swapCid?: string | null): RecordWrite => ({ action: "delete", collection: POST, rkey, ...(swapCid === undefined ? {} : { swapCid }) });

/** Records and preferences on each engine (docs/decisions/0002: applyWrites is all or nothing). */
describe.each(ENGINES)("SqlRepoStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  let store: SqlRepoStore;

  beforeEach(async () => {
    store = new SqlRepoStore(shared.db, GRACE);
    await insertAccount(shared.db, ALICE);
    await insertAccount(shared.db, BOB);
  });


  it("creates a record and reads it back, value and times as written", async () => {
    expect(await store.applyWrites(ALICE, [create("3k2a")], NOW)).toBeUndefined();
    expect(await store.getRecord(ALICE, POST, "3k2a")).toEqual({ collection: POST, rkey: "3k2a", cid: "cid-3k2a-3k2a", value: { $type: POST, text: "3k2a" }, createdAt: NOW, updatedAt: NOW });
    expect(await store.getRecord(BOB, POST, "3k2a")).toBeUndefined();
  });

  it("create refuses a taken key; update refuses a missing one; put is either", async () => {
    await store.applyWrites(ALICE, [create("a")], NOW);
    expect(await store.applyWrites(ALICE, [create("a", "again")], NOW)).toEqual({ kind: "exists", collection: POST, rkey: "a" });
    expect(await store.applyWrites(ALICE, [update("b", "x")], NOW)).toEqual({ kind: "missing", collection: POST, rkey: "b" });
    expect(await store.applyWrites(ALICE, [put("b", "new"), put("a", "changed"), update("a", "updated")], NOW + 1)).toBeUndefined();
    expect(await store.getRecord(ALICE, POST, "a")).toMatchObject({ value: { text: "updated" }, createdAt: NOW, updatedAt: NOW + 1 });
    expect(await store.getRecord(ALICE, POST, "b")).toMatchObject({ value: { text: "new" } });
  });

  it("swapCid: the write applies only over the named version (null: only where there is none)", async () => {
    await store.applyWrites(ALICE, [create("a", "v1")], NOW);
    expect(await store.applyWrites(ALICE, [put("a", "v2", "cid-a-other")], NOW)).toEqual({ kind: "swap-mismatch", collection: POST, rkey: "a" });
    expect(await store.applyWrites(ALICE, [put("a", "v2", null)], NOW)).toEqual({ kind: "swap-mismatch", collection: POST, rkey: "a" });
    expect(await store.applyWrites(ALICE, [put("a", "v2", "cid-a-v1")], NOW)).toBeUndefined();
    expect(await store.applyWrites(ALICE, [put("b", "v1", null)], NOW)).toBeUndefined();
    expect(await store.applyWrites(ALICE, [remove("a", "cid-a-v1")], NOW)).toEqual({ kind: "swap-mismatch", collection: POST, rkey: "a" });
    expect(await store.applyWrites(ALICE, [remove("a", "cid-a-v2")], NOW)).toBeUndefined();
    expect(await store.getRecord(ALICE, POST, "a")).toBeUndefined();
  });

  it("a batch with one conflict applies none of its writes", async () => {
    await store.applyWrites(ALICE, [create("a")], NOW);
    expect(await store.applyWrites(ALICE, [create("b"), update("c", "x"), create("a", "again")], NOW)).toMatchObject({ kind: "missing", rkey: "c" });
    expect(await store.getRecord(ALICE, POST, "b")).toBeUndefined();
    expect(await store.getRecord(ALICE, POST, "a")).toMatchObject({ value: { text: "a" } });
  });

  it("lists records by key, newest key first by default, bytewise on both engines, with cursor and limit", async () => {
    // The test cluster's databases compare text bytewise (locale C) anyway; a deployment's need not. On PostgreSQL the
    // key column gets a locale-aware collation here, as in such a database, so that the listing must order bytewise
    // itself. A handle of its own: statements prepared while the column's collation differs stay on it.
    const db = shared.test.connect();
    const own = new SqlRepoStore(db, GRACE);
    const rkeys = async (options: { limit: number; cursor?: string; reverse: boolean }) => (await own.listRecords(ALICE, POST, options)).map((record) => record.rkey);
    if (engine === "postgresql") await execute(db, sql`ALTER TABLE "Record" ALTER COLUMN "rkey" TYPE TEXT COLLATE "und-x-icu"`);
    try {
      // Keys whose order differs between a bytewise and a locale-aware comparison.
      const keys = ["B", "a", "_z", "a-b", "aa", "Z9", "~"];
      await own.applyWrites(ALICE, keys.map((rkey) => create(rkey)), NOW);
      await own.applyWrites(BOB, [create("zz")], NOW);
      const bytewise = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      expect(await rkeys({ limit: 100, reverse: true })).toEqual(bytewise);
      expect(await rkeys({ limit: 100, reverse: false })).toEqual([...bytewise].reverse());
      expect(await rkeys({ limit: 2, reverse: false })).toEqual([...bytewise].reverse().slice(0, 2));
      expect(await rkeys({ limit: 3, reverse: false, cursor: "a" })).toEqual(bytewise.slice(0, bytewise.indexOf("a")).reverse().slice(0, 3));
      expect(await rkeys({ limit: 3, reverse: true, cursor: "a" })).toEqual(bytewise.slice(bytewise.indexOf("a") + 1).slice(0, 3));
    } finally {
      if (engine === "postgresql") await execute(db, sql`ALTER TABLE "Record" ALTER COLUMN "rkey" TYPE TEXT COLLATE "default"`);
    }
  });

  it("preferences: none at first, then the latest put", async () => {
    expect(await store.getPreferences(ALICE)).toEqual([]);
    await store.putPreferences(ALICE, [{ $type: "app.bsky.actor.defs#adultContentPref", enabled: false }], NOW);
    await store.putPreferences(ALICE, [{ $type: "app.bsky.actor.defs#savedFeedsPrefV2", items: [] }], NOW + 1);
    expect(await store.getPreferences(ALICE)).toEqual([{ $type: "app.bsky.actor.defs#savedFeedsPrefV2", items: [] }]);
    expect(await store.getPreferences(BOB)).toEqual([]);
  });

  it(`RACE: 20 creates of one key ${raceOn(engine, 4)}: one record, the others told it exists`, async () => {
    const stores = shared.others(4).map((db) => new SqlRepoStore(db, GRACE));
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => stores[i % 4]!.applyWrites(ALICE, [create("contested", `try ${i}`)], NOW)));
    expect(results.filter((conflict) => conflict === undefined)).toHaveLength(1);
    expect(results.filter((conflict) => conflict?.kind === "exists")).toHaveLength(19);
    expect(await countRows(shared.db, "Record")).toBe(1);
  });

  it(`RACE: 20 compare-and-swaps over one version ${raceOn(engine, 4)}: exactly one applies`, async () => {
    await store.applyWrites(ALICE, [create("contested", "v0")], NOW);
    const stores = shared.others(4).map((db) => new SqlRepoStore(db, GRACE));
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => stores[i % 4]!.applyWrites(ALICE, [put("contested", `v${i + 1}`, "cid-contested-v0")], NOW + 1)));
    expect(results.filter((conflict) => conflict === undefined)).toHaveLength(1);
    expect(results.filter((conflict) => conflict?.kind === "swap-mismatch")).toHaveLength(19);
    expect(await store.getRecord(ALICE, POST, "contested")).toMatchObject({ value: { text: `v${results.indexOf(undefined) + 1}` } });
  });
});
