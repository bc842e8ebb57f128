import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ENGINES, execute, openTestDatabase, raceOn, type TestDatabase } from "../../../tests/helpers/databases.ts";
import { at, sql } from "../db/sql.ts";
import { SqlNoticeStore } from "./sql-notice-store.ts";

/**
 * The new-sign-in emails' store (docs/decisions/0056), on each engine: the first browser of an account is claimed
 * once whatever races, the setting, and the one-click links: found in any state, spent once, not after expiry.
 */
describe.each(ENGINES)("SqlNoticeStore on %s", (engine) => {
  let test: TestDatabase;
  let store: SqlNoticeStore;
  const T = 1_700_000_000_000;
  const ALICE = "did:plc:alice";
  const DAY = 86_400_000;

  beforeEach(async () => {
    test = await openTestDatabase(engine);
    store = new SqlNoticeStore(test.db);
    await execute(test.db, sql`INSERT INTO "Account" ("did", "handle", "email", "passwordHash", "signingKey", "createdAt", "updatedAt")
      VALUES (${ALICE}, 'alice.test', 'alice@example.com', 'scrypt$old', '{}', ${at(T)}, ${at(T)})`);
  });
  afterEach(() => test.close());

  const link = (tokenHash: string, createdAt = T) => ({
    tokenHash,
    accountDid: ALICE,
    target: { kind: "app" as const, clientId: "https://app.example/client.json", since: T - 5 },
    label: "Example App",
    createdAt,
    expiresAt: createdAt + 7 * DAY,
  });

  it("the setting is on by default and is kept", async () => {
    expect(await store.recipient(ALICE)).toEqual({ handle: "alice.test", email: "alice@example.com", signInNotices: true });
    await store.setSignInNotices(ALICE, false, T);
    expect((await store.recipient(ALICE))?.signInNotices).toBe(false);
    expect(await store.recipient("did:plc:nobody")).toBeUndefined();
  });

  it(`race: ten first sign-ins ${raceOn(engine, 2)}: one is the first browser`, async () => {
    const other = new SqlNoticeStore(test.connect());
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? other : store).claimFirstBrowser(ALICE, T + i)));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await store.claimFirstBrowser(ALICE, T + 20)).toBe(false);
  });

  it("a link is found with its target and handle, spent once, and not after it expires", async () => {
    await store.addLink(link("h1"));
    await store.addLink({ ...link("h2"), target: { kind: "browser", deviceHash: "device-hash" }, label: "Mozilla/5.0" });
    expect(await store.findLink("h1")).toEqual({ ...link("h1"), usedAt: null, handle: "alice.test" });
    expect((await store.findLink("h2"))?.target).toEqual({ kind: "browser", deviceHash: "device-hash" });
    expect(await store.spendLink("h1", T + 1)).toBe(true);
    expect(await store.spendLink("h1", T + 2)).toBe(false);
    expect((await store.findLink("h1"))?.usedAt).toBe(T + 1);
    expect(await store.spendLink("h2", T + 7 * DAY)).toBe(false);
    expect(await store.findLink("nothing")).toBeUndefined();
  });

  it(`race: ten clicks of one link ${raceOn(engine, 2)} spend it once`, async () => {
    await store.addLink(link("race"));
    const other = new SqlNoticeStore(test.connect());
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? other : store).spendLink("race", T + 1)));
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it("links expired a month are deleted as new ones are stored (a newly expired one is kept to say so), and with their account", async () => {
    await store.addLink(link("old"));
    await store.addLink(link("expired", T + 20 * DAY));
    await store.addLink(link("new", T + 38 * DAY));
    expect(await store.findLink("old")).toBeUndefined();
    expect((await store.findLink("expired"))?.expiresAt).toBe(T + 27 * DAY);
    await execute(test.db, sql`DELETE FROM "Account" WHERE "did" = ${ALICE}`);
    expect(await store.findLink("new")).toBeUndefined();
  });
});
