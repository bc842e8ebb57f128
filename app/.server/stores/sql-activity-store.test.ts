import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, execute, raceOn } from "../../../tests/helpers/databases.ts";
import { raceAgainstGatedTransaction } from "../../../tests/helpers/postgres.ts";
import { countOf, insertAccount, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import type { PostgresDatabase } from "../db/postgres-database.ts";
import { ACTIVITY_DAYS, dayOf, MAX_TARGETS_PER_KIND, oauthApp, appPasswordApp, expiredDay, type ActivityCount } from "../activity/activity-lines.ts";
import { sql } from "../db/sql.ts";
import { DAY, HOUR } from "../util/time.ts";
import { SqlActivityStore, forgetActivity } from "./sql-activity-store.ts";

const NOW = Date.UTC(2026, 10, 28, 10, 0, 0);
const TODAY = dayOf(NOW);
const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
const APP = oauthApp("https://app.example/client-metadata.json");
const OTHER = appPasswordApp("app-1");

const posts = (count: number): ActivityCount => ({ kind: "create", target: "app.bsky.feed.post", count });

/** The apps' activity counters on each engine (docs/decisions/0053): sums, days, the cap of targets, expiry. */
describe.each(ENGINES)("SqlActivityStore on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  let store: SqlActivityStore;
  const rowsOf = (did: string, app: string) => countOf(shared.db, sql`SELECT COUNT(*) AS "n" FROM "AppActivity" WHERE "accountDid" = ${did} AND "app" = ${app}`);

  beforeEach(async () => {
    store = new SqlActivityStore(shared.db);
    await insertAccount(shared.db, ALICE);
    await insertAccount(shared.db, BOB);
  });

  it("adds counts to one row per day, kind and target, with the last time; apps and accounts apart", async () => {
    await store.count(ALICE, APP, TODAY, [posts(3), { kind: "delete", target: "app.bsky.feed.like", count: 1 }], NOW, false);
    await store.count(ALICE, APP, TODAY, [posts(1)], NOW + HOUR, false);
    await store.count(ALICE, APP, TODAY - DAY, [posts(2)], NOW - DAY, false);
    await store.count(ALICE, OTHER, TODAY, [posts(7)], NOW, false);
    await store.count(BOB, APP, TODAY, [posts(9)], NOW, false);
    const history = await store.history(ALICE, APP, expiredDay(NOW));
    // Newest day first; within a day, in no particular order.
    expect(history.map((row) => row.day)).toEqual([TODAY, TODAY, TODAY - DAY]);
    expect(history).toEqual(
      expect.arrayContaining([
        { day: TODAY, kind: "create", target: "app.bsky.feed.post", count: 4, lastAt: NOW + HOUR },
        { day: TODAY, kind: "delete", target: "app.bsky.feed.like", count: 1, lastAt: NOW },
        { day: TODAY - DAY, kind: "create", target: "app.bsky.feed.post", count: 2, lastAt: NOW - DAY },
      ]),
    );
    expect(await rowsOf(ALICE, APP)).toBe(3);
  });

  it("counts at most MAX_TARGETS_PER_KIND targets of a kind a day; the rest on the kind's overflow, the known ones as before", async () => {
    const many = Array.from({ length: MAX_TARGETS_PER_KIND + 15 }, (_, i): ActivityCount => ({ kind: "call", target: `com.example.method${i} did:web:svc.example#svc`, count: 1 }));
    await store.count(ALICE, APP, TODAY, many.slice(0, 10), NOW, false);
    await store.count(ALICE, APP, TODAY, many.slice(10), NOW, false);
    await store.count(ALICE, APP, TODAY, [many[0]!, many[30]!], NOW, false);
    const rows = await store.history(ALICE, APP, expiredDay(NOW));
    expect(rows).toHaveLength(MAX_TARGETS_PER_KIND + 1);
    expect(rows.find((row) => row.target === many[0]!.target)?.count).toBe(2);
    expect(rows.find((row) => row.target === "")?.count).toBe(16);
    expect(rows.reduce((sum, row) => sum + row.count, 0)).toBe(many.length + 2);
    // Another kind has its own cap.
    await store.count(ALICE, APP, TODAY, [posts(1)], NOW, false);
    expect(await rowsOf(ALICE, APP)).toBe(MAX_TARGETS_PER_KIND + 2);
  });

  it(`RACE: 40 counts of new targets of one app ${raceOn(engine, 4)}: the cap holds and nothing is lost`, async () => {
    const stores = shared.others(4).map((db) => new SqlActivityStore(db));
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => stores[i % 4]!.count(ALICE, APP, TODAY, [{ kind: "blob", target: `image/x-kind${i}`, count: 1 }], NOW, false)),
    );
    const rows = await store.history(ALICE, APP, expiredDay(NOW));
    expect(rows.filter((row) => row.target !== "")).toHaveLength(MAX_TARGETS_PER_KIND);
    expect(rows.reduce((sum, row) => sum + row.count, 0)).toBe(40);
  });

  if (engine === "postgresql") {
    it("a count of a new target waits for another count of the app, and then finds the cap reached", async () => {
      const filled = Array.from({ length: MAX_TARGETS_PER_KIND - 1 }, (_, i): ActivityCount => ({ kind: "blob", target: `image/x-kind${i}`, count: 1 }));
      await store.count(ALICE, APP, TODAY, filled, NOW, false);
      await raceAgainstGatedTransaction(
        shared.db as PostgresDatabase,
        (gated) => new SqlActivityStore(gated).count(ALICE, APP, TODAY, [{ kind: "blob", target: "image/last-place", count: 1 }], NOW, false),
        () => store.count(ALICE, APP, TODAY, [{ kind: "blob", target: "image/one-too-many", count: 1 }], NOW, false),
      );
      const targets = (await store.history(ALICE, APP, expiredDay(NOW))).map((row) => row.target);
      expect(targets).toContain("image/last-place");
      expect(targets).toContain("");
      expect(targets).not.toContain("image/one-too-many");
    });
  }

  it(`keeps ${ACTIVITY_DAYS} days: older rows are not read, a count's cleanup and a page's drop delete them`, async () => {
    const oldest = TODAY - (ACTIVITY_DAYS - 1) * DAY;
    await store.count(ALICE, APP, oldest, [posts(1)], oldest, false);
    await store.count(ALICE, APP, oldest - DAY, [posts(1)], oldest - DAY, false);
    await store.count(BOB, APP, oldest - 2 * DAY, [posts(1)], oldest - 2 * DAY, false);
    expect((await store.history(ALICE, APP, expiredDay(NOW))).map((row) => row.day)).toEqual([oldest]);
    await store.count(ALICE, OTHER, TODAY, [posts(1)], NOW, true);
    expect(await rowsOf(ALICE, APP)).toBe(1);
    expect(await rowsOf(BOB, APP)).toBe(0);
    await store.count(ALICE, APP, oldest - DAY, [posts(1)], oldest - DAY, false);
    await store.dropExpired(ALICE, expiredDay(NOW));
    expect(await rowsOf(ALICE, APP)).toBe(1);
  });

  it("an app's history goes when its access ends, and every app's with the account", async () => {
    await store.count(ALICE, APP, TODAY, [posts(1)], NOW, false);
    await store.count(ALICE, OTHER, TODAY, [posts(1)], NOW, false);
    await shared.db.transaction(() => forgetActivity(ALICE, APP));
    expect([await rowsOf(ALICE, APP), await rowsOf(ALICE, OTHER)]).toEqual([0, 1]);
    await execute(shared.db, sql`DELETE FROM "Account" WHERE "did" = ${ALICE}`);
    expect(await rowsOf(ALICE, OTHER)).toBe(0);
  });
});
