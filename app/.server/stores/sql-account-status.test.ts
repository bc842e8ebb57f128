import { decode } from "@atproto/lex-cbor";
import { beforeEach, describe, expect, it } from "vitest";
import { ENGINES, raceOn } from "../../../tests/helpers/databases.ts";
import { accountWithRepository, repositoriesOn, type Clock } from "../../../tests/helpers/repositories.ts";
import { useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { AccountStatusManager } from "../accounts/account-status.ts";
import type { Database } from "../db/sql.ts";
import { hasCode } from "../errors/atrium-error.ts";
import type { WriteRequest } from "../repo/repo-writer.ts";
import { SqlEventLog } from "./sql-event-log.ts";
import { SqlTakedownStore } from "./sql-takedown-store.ts";

const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
/** A collection this server has no lexicon for: these tests are about the repository, not about records checked against their lexicons (record-lexicons.test.ts). */
const NOTE = "com.example.note";
const create = (rkey: string): WriteRequest => ({ action: "create", collection: NOTE, rkey, value: { $type: NOTE, text: rkey } });

/** A write's outcome: "ok", or the code it was refused with. */
async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "ok";
  } catch (error) {
    if (hasCode(error, "AccountDeactivated")) return "AccountDeactivated";
    throw error;
  }
}

/**
 * Deactivation and reactivation on each engine (docs/decisions/0031): the status and its firehose events are one
 * step of the repository store, under the lock every commit of the account takes.
 */
describe.each(ENGINES)("account status (RepoStore.changeAccountStatus) on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const clock: Clock = { now: 1_800_000_000_000 };
  const handles: Record<string, string> = { [ALICE]: "alice.test", [BOB]: "bob.test" };
  const on = (db: Database) => {
    const { store, writer } = repositoriesOn(db, clock);
    return { store, writer, status: new AccountStatusManager(store, new SqlTakedownStore(db, 3600_000), async (did) => handles[did], () => clock.now) };
  };
  const main = () => on(shared.db);
  const events = async () => (await new SqlEventLog(shared.db, 3600_000).after(0, { events: 10_000, bytes: 2 ** 30 })).filter((event) => event.did === ALICE);

  beforeEach(async () => {
    clock.now = 1_800_000_000_000;
    await accountWithRepository(shared.db, ALICE, clock);
    await accountWithRepository(shared.db, BOB, clock);
  });

  it("deactivating appends #account active=false status=deactivated with the change, once", async () => {
    const { status, store } = main();
    const before = (await events()).length;
    expect(await status.deactivate(ALICE)).toBe(true);
    expect(await status.statusOf(ALICE)).toEqual({ active: false, status: "deactivated", since: clock.now });
    expect(await store.availability(ALICE)).toEqual({ deactivatedAt: clock.now, takendownAt: null, takedownRef: null, head: await store.head(ALICE) });
    const added = (await events()).slice(before);
    expect(added.map((event) => event.type)).toEqual(["account"]);
    expect(decode(added[0]!.body)).toEqual({ did: ALICE, active: false, status: "deactivated", time: new Date(clock.now).toISOString() });
    // Again: nothing changes and nothing more is announced.
    expect(await status.deactivate(ALICE)).toBe(true);
    expect((await events()).length).toBe(before + 1);
    expect(await status.statusOf(BOB)).toEqual({ active: true });
  });

  it("refuses commits while deactivated, lists the repository as inactive, and keeps the records", async () => {
    const { status, store, writer } = main();
    await writer.write(ALICE, [create("kept")]);
    const head = await store.head(ALICE);
    await status.deactivate(ALICE);
    expect(await outcome(writer.write(ALICE, [create("refused")]))).toBe("AccountDeactivated");
    expect(await store.head(ALICE)).toEqual(head);
    expect(await store.getRecord(ALICE, NOTE, "kept")).toBeDefined();
    expect(await store.getRecord(ALICE, NOTE, "refused")).toBeUndefined();
    const listed = await store.listRepos({ limit: 10 });
    expect(listed.map((repo) => [repo.did, repo.state])).toEqual([
      [ALICE, "deactivated"],
      [BOB, "active"],
    ]);
    expect(await outcome(writer.write(BOB, [create("bob")]))).toBe("ok");
  });

  it("reactivating appends #account active, #identity with the handle and #sync with the current commit; writes work again", async () => {
    const { status, store, writer } = main();
    await writer.write(ALICE, [create("kept")]);
    await status.deactivate(ALICE);
    const before = (await events()).length;
    clock.now += 60_000;
    expect(await status.activate(ALICE)).toBe(true);
    const added = (await events()).slice(before);
    expect(added.map((event) => event.type)).toEqual(["account", "identity", "sync"]);
    const time = new Date(clock.now).toISOString();
    expect(decode(added[0]!.body)).toEqual({ did: ALICE, active: true, time });
    expect(decode(added[1]!.body)).toEqual({ did: ALICE, handle: "alice.test", time });
    const head = (await store.head(ALICE))!;
    expect(decode(added[2]!.body)).toMatchObject({ did: ALICE, rev: head.rev, time });
    expect(await status.statusOf(ALICE)).toEqual({ active: true });
    expect(await outcome(writer.write(ALICE, [create("after")]))).toBe("ok");
    // Reactivating an active account announces nothing.
    const now = (await events()).length;
    expect(await status.activate(ALICE)).toBe(true);
    expect((await events()).length).toBe(now);
  });

  it("an unknown account has no status to change", async () => {
    const { status } = main();
    expect(await status.statusOf("did:plc:nobody")).toBeUndefined();
    expect(await status.deactivate("did:plc:nobody")).toBe(false);
    expect(await status.activate("did:plc:nobody")).toBe(false);
  });

  it(`deactivation racing writes ${raceOn(engine, 5)}: no commit is sequenced after the #account deactivated event`, async () => {
    const writers = shared.others(4).map(on);
    const deactivating = on(shared.others(5)[4]!);
    const writes = writers.flatMap((side, i) => [0, 1, 2].map((n) => outcome(side.writer.write(ALICE, [create(`w${i}-${n}`)]))));
    const [results] = await Promise.all([Promise.all(writes), deactivating.status.deactivate(ALICE)]);
    const log = await events();
    const deactivatedAt = log.findIndex((event) => event.type === "account" && (decode(event.body) as { active: boolean }).active === false);
    expect(deactivatedAt).toBeGreaterThan(-1);
    expect(log.slice(deactivatedAt + 1).filter((event) => event.type === "commit")).toEqual([]);
    // Every write either committed (its event before the deactivation) or was refused; none half-landed.
    const committed = log.slice(0, deactivatedAt).filter((event) => event.type === "commit").length - 1;
    expect(results.filter((result) => result === "ok").length).toBe(committed);
    expect(results.every((result) => result === "ok" || result === "AccountDeactivated")).toBe(true);
    const { store } = main();
    const stored = await store.listRecords(ALICE, NOTE, { limit: 100, reverse: false });
    expect(stored.length).toBe(committed);
  });
});
