import { describe, expect, it } from "vitest";
import { ENGINES } from "../../../tests/helpers/databases.ts";
import { countRows, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import type { NewEvent } from "../sync/event-log.ts";
import { EVENT_PRUNE_BATCH, SqlEventLog } from "./sql-event-log.ts";

const HOUR = 3600_000;
const RETENTION = 72 * HOUR;
const T0 = 1_800_000_000_000;

const event = (n: number, did = "did:plc:alice"): NewEvent => ({ did, type: n % 2 ? "identity" : "account", body: Uint8Array.of(n % 256, Math.floor(n / 256)) });

/** The sequencer's log (docs/decisions/0027) on each engine: numbered from 1 in commit order, pruned lazily. */
describe.each(ENGINES)("SqlEventLog on %s", (engine) => {
  const shared = useSharedDatabase(engine);
  const log = () => new SqlEventLog(shared.db, RETENTION);

  it("is empty at first: latest seq 0, nothing after 0, no seq since any time", async () => {
    expect(await log().latestSeq()).toBe(0);
    expect(await log().after(0, 10)).toEqual([]);
    expect(await log().firstSeqSince(T0)).toBeUndefined();
  });

  it("numbers events from 1 (on a new database) in the order appended and gives them back after a cursor, body, type and time as written", async () => {
    expect(await log().append([event(1), event(2)], T0)).toEqual([1, 2]);
    expect(await log().append([event(3, "did:plc:bob")], T0 + 5)).toEqual([3]);
    expect(await log().latestSeq()).toBe(3);
    expect(await log().after(0, 2)).toEqual([
      { seq: 1, did: "did:plc:alice", type: "identity", body: Uint8Array.of(1, 0), time: T0 },
      { seq: 2, did: "did:plc:alice", type: "account", body: Uint8Array.of(2, 0), time: T0 },
    ]);
    expect((await log().after(2, 10)).map((row) => [row.seq, row.did, row.time])).toEqual([[3, "did:plc:bob", T0 + 5]]);
    expect(await log().firstSeqSince(T0 + 1)).toBe(3);
    expect(await log().firstSeqSince(T0 + 6)).toBeUndefined();
  });

  it("prunes events older than the backfill window, a small batch per append; numbers never restart", async () => {
    const many = Array.from({ length: 2 * EVENT_PRUNE_BATCH + 5 }, (_, i) => event(i));
    // Tables are emptied between tests, sequences are not: count from this test's first event.
    const base = (await log().append(many, T0))[0]! - 1;
    await log().append([event(1000)], T0 + RETENTION);
    expect(await countRows(shared.db, "RepoEvent")).toBe(many.length + 1 - EVENT_PRUNE_BATCH);
    await log().append([event(1001)], T0 + RETENTION + 1);
    expect(await countRows(shared.db, "RepoEvent")).toBe(many.length + 2 - 2 * EVENT_PRUNE_BATCH);
    expect(await log().latestSeq()).toBe(base + many.length + 2);
    expect(await log().firstSeqSince(T0 + RETENTION)).toBe(base + many.length + 1);
  });

  it("RACE: appends from four processes at once while a reader tails: the reader never sees a seq before a lower one exists", async () => {
    const writers = shared.others(4).map((db) => new SqlEventLog(db, RETENTION));
    const reader = new SqlEventLog(shared.db, RETENTION);
    const [start] = await reader.append([event(0)], T0);
    const total = 80;
    let done = false;
    const appends = Promise.all(Array.from({ length: total }, (_, i) => writers[i % 4]!.append([event(i)], T0))).finally(() => (done = true));
    let cursor = start!;
    const gaps: number[] = [];
    // Tail as a subscriber does: each read must continue exactly where the last one stopped.
    while (!done || cursor < start! + total) {
      for (const row of await reader.after(cursor, 1000)) {
        if (row.seq !== cursor + 1) gaps.push(row.seq);
        cursor = row.seq;
      }
    }
    await appends;
    expect(gaps).toEqual([]);
    expect(cursor).toBe(start! + total);
  });
});
