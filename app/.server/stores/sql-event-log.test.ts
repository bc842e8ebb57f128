import { describe, expect, it } from "vitest";
import { ENGINES, execute, rowOf } from "../../../tests/helpers/databases.ts";
import { gatedRace } from "../../../tests/helpers/postgres.ts";
import { postgresPlan, sqlitePlan } from "../../../tests/helpers/query-plans.ts";
import { accountWithRepository, repositoriesOn, type Clock } from "../../../tests/helpers/repositories.ts";
import { countRows, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import type { PostgresDatabase } from "../db/postgres-database.ts";
import { sql, type Database } from "../db/sql.ts";
import type { EventLog, NewEvent } from "../sync/event-log.ts";
import { deleteEventsOf, EVENT_PRUNE_BATCH, SqlEventLog } from "./sql-event-log.ts";

const HOUR = 3600_000;
const RETENTION = 72 * HOUR;
const T0 = 1_800_000_000_000;
/** A read that no test here reaches the limits of. */
const ALL = { events: 10_000, bytes: 2 ** 30 };

const event = (n: number, did = "did:plc:alice"): NewEvent => ({ did, type: n % 2 ? "identity" : "account", body: Uint8Array.of(n % 256, Math.floor(n / 256)) });
const sized = (bytes: number, did = "did:plc:alice"): NewEvent => ({ did, type: "commit", body: new Uint8Array(bytes).fill(bytes % 251) });

/**
 * Every implementation of the event log (app/.server/sync/event-log.ts): the server's own, in its database, on each
 * engine (docs/decisions/0027, 0044). The firehose's tests run on it too (tests/helpers/in-process-server.ts); there is
 * no other.
 */
const IMPLEMENTATIONS = ENGINES.map((engine) => ({ name: `SqlEventLog on ${engine}`, engine, open: (db: Database): EventLog => new SqlEventLog(db, RETENTION) }));

describe.each(IMPLEMENTATIONS)("the EventLog contract: $name", ({ engine, open }) => {
  const shared = useSharedDatabase(engine);
  const log = () => open(shared.db);

  it("is empty at first: latest seq 0, nothing after 0, no seq since any time", async () => {
    expect(await log().latestSeq()).toBe(0);
    expect(await log().after(0, ALL)).toEqual([]);
    expect(await log().firstSeqSince(T0)).toBeUndefined();
  });

  it("numbers events from 1 (on a new database) in the order appended and gives them back after a cursor, body, type and time as written", async () => {
    expect(await log().append([event(1), event(2)], T0)).toEqual([1, 2]);
    expect(await log().append([event(3, "did:plc:bob")], T0 + 5)).toEqual([3]);
    expect(await log().latestSeq()).toBe(3);
    expect(await log().after(0, { events: 2, bytes: 1024 })).toEqual([
      { seq: 1, did: "did:plc:alice", type: "identity", body: Uint8Array.of(1, 0), time: T0 },
      { seq: 2, did: "did:plc:alice", type: "account", body: Uint8Array.of(2, 0), time: T0 },
    ]);
    expect((await log().after(2, ALL)).map((row) => [row.seq, row.did, row.time])).toEqual([[3, "did:plc:bob", T0 + 5]]);
    expect(await log().firstSeqSince(T0 + 1)).toBe(3);
    expect(await log().firstSeqSince(T0 + 6)).toBeUndefined();
  });

  it("reads within its limits: as many events as fit in the bytes, an event larger than them alone, never more than the count", async () => {
    const [first] = await log().append([sized(100), sized(200), sized(300), sized(5000), sized(50), sized(60), sized(70)], T0);
    const base = first! - 1;
    const read = async (cursor: number, limits: { events: number; bytes: number }) =>
      (await log().after(base + cursor, limits)).map((row) => [row.seq - base, row.body.length]);
    // 100 + 200 + 300 = 600 fit in 600; the 5000 would not.
    expect(await read(0, { events: 10, bytes: 600 })).toEqual([[1, 100], [2, 200], [3, 300]]);
    expect(await read(0, { events: 10, bytes: 599 })).toEqual([[1, 100], [2, 200]]);
    // Larger than the limit: it comes alone, or it could never be read.
    expect(await read(3, { events: 10, bytes: 600 })).toEqual([[4, 5000]]);
    expect(await read(4, { events: 2, bytes: 600 })).toEqual([[5, 50], [6, 60]]);
    expect(await read(4, { events: 10, bytes: 600 })).toEqual([[5, 50], [6, 60], [7, 70]]);
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

  it("numbers past 2^31 (a busy server's years) and up to 2^53 - 1, exactly, as JSON-safe numbers", async () => {
    const before = await sequenceOf(shared.db);
    try {
      for (const [i, start] of [2 ** 31 + 5, Number.MAX_SAFE_INTEGER - 2].entries()) {
        await moveSequenceTo(shared.db, start);
        const time = T0 + i * HOUR;
        const seqs = await log().append([event(1), event(2)], time);
        expect(seqs).toEqual([start + 1, start + 2]);
        expect(await log().latestSeq()).toBe(start + 2);
        const read = await log().after(start, ALL);
        expect(read.map((row) => row.seq)).toEqual([start + 1, start + 2]);
        expect(JSON.parse(JSON.stringify(read.map((row) => row.seq)))).toEqual([start + 1, start + 2]);
        expect(await log().firstSeqSince(time)).toBe(start + 1);
      }
    } finally {
      // Sequences outlive the emptied tables: the tests after this one number from where they did before it.
      await execute(shared.db, sql`DELETE FROM "RepoEvent"`);
      await moveSequenceTo(shared.db, before);
    }
  });

  it("finds one account's events (its deletion) through the index on did", async () => {
    const text = deleteEventsOf("did:plc:x").parts.join("?");
    if (engine === "sqlite") {
      expect(sqlitePlan(shared.db, text, "did:plc:x")).toEqual([expect.stringMatching(/^SEARCH RepoEvent USING (COVERING )?INDEX RepoEvent_did_idx \(did=\?\)/)]);
    } else {
      const plan = await postgresPlan(shared.db, text, ["did:plc:x"]);
      expect(plan).toEqual(expect.arrayContaining([expect.objectContaining({ index: "RepoEvent_did_idx", indexCond: expect.stringContaining("did =") })]));
      expect(plan.filter((node) => node.nodeType === "Seq Scan")).toEqual([]);
    }
  });

  it("RACE: appends from four processes at once while a reader tails: the reader never sees a seq before a lower one exists", async () => {
    const writers = shared.others(4).map((db) => open(db));
    const reader = log();
    const [start] = await reader.append([event(0)], T0);
    const total = 80;
    let done = false;
    const appends = Promise.all(Array.from({ length: total }, (_, i) => writers[i % 4]!.append([event(i)], T0))).finally(() => (done = true));
    let cursor = start!;
    const gaps: number[] = [];
    // Tail as a subscriber does: each read must continue exactly where the last one stopped; one more once all are in.
    for (let last = false; !last; ) {
      last = done;
      for (const row of await reader.after(cursor, ALL)) {
        if (row.seq !== cursor + 1) gaps.push(row.seq);
        cursor = row.seq;
      }
    }
    await appends;
    expect(gaps).toEqual([]);
    expect(cursor).toBe(start! + total);
  });
});

/** The last number the log's sequence gave (0 before any). */
async function sequenceOf(db: Database): Promise<number> {
  const row =
    db.engine === "postgresql"
      ? await rowOf<{ n: number }>(db, sql`SELECT CASE WHEN "is_called" THEN "last_value" ELSE 0 END AS "n" FROM "RepoEvent_seq_seq"`)
      : await rowOf<{ n: number }>(db, sql`SELECT "seq" AS "n" FROM sqlite_sequence WHERE "name" = ${"RepoEvent"}`);
  return row?.n ?? 0;
}

/** The next append is numbered `seq + 1` (the log must hold no larger seq). */
async function moveSequenceTo(db: Database, seq: number): Promise<void> {
  if (db.engine === "postgresql") {
    // setval(…, 0, false) is refused (below the sequence's minimum): 1 not yet called numbers the next append 1.
    await execute(db, seq === 0 ? sql`SELECT setval('"RepoEvent_seq_seq"', 1, false)` : sql`SELECT setval('"RepoEvent_seq_seq"', ${seq})`);
    return;
  }
  // SQLite's AUTOINCREMENT numbers after the largest seq it ever gave, kept in sqlite_sequence.
  await execute(db, sql`DELETE FROM sqlite_sequence WHERE "name" = ${"RepoEvent"}`);
  await execute(db, sql`INSERT INTO sqlite_sequence ("name", "seq") VALUES (${"RepoEvent"}, ${seq})`);
}

/**
 * docs/decisions/0027, the sequencer: on PostgreSQL a sequence number is drawn at INSERT, not at COMMIT. Two commits of
 * different accounts share nothing but the sequencer's lock; the first is held open after its event was numbered, and a
 * reader looks at the log while the second commit runs, as a subscriber's tail would.
 */
describe("the sequencer on postgresql", () => {
  const shared = useSharedDatabase("postgresql");
  const clock: Clock = { now: T0 };

  it("RACE (gated, two connections): a commit numbered after one not yet committed waits for it, so a reader in between skips nothing", async () => {
    await accountWithRepository(shared.db, "did:plc:alice", clock);
    await accountWithRepository(shared.db, "did:plc:bob", clock);
    const log = new SqlEventLog(shared.db, RETENTION);
    const start = await log.latestSeq();
    let cursor = start;
    const seen: number[] = [];
    const tail = async () => {
      for (const row of await log.after(cursor, ALL)) {
        seen.push(row.seq);
        cursor = row.seq;
      }
    };
    const post = (text: string) => ({ action: "create" as const, collection: "com.example.note", rkey: text, value: { $type: "com.example.note", text } });
    const { secondWaited } = await gatedRace(
      shared.db as PostgresDatabase,
      // Alice's commit: its #commit numbered, its transaction held before COMMIT.
      (gated) => repositoriesOn(gated, clock).writer.write("did:plc:alice", [post("a1")]),
      () => repositoriesOn(shared.db, clock).writer.write("did:plc:bob", [post("b1")]),
      // Bob's commit has waited or finished: the reader reads what is committed now.
      () => tail(),
    );
    await tail();
    // Every event appended since the start, in seq order, each read once: nothing skipped.
    const logged = (await log.after(start, ALL)).map((row) => ({ seq: row.seq, did: row.did }));
    expect(logged.map((row) => row.seq)).toEqual(seen);
    // Commit order is seq order: Alice's commit, committed first, has the lower number; Bob's waited for it.
    expect(logged.map((row) => row.did)).toEqual(["did:plc:alice", "did:plc:bob"]);
    expect(secondWaited).toBe(true);
  });
});
