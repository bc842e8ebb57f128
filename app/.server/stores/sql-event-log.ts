import { shape } from "../db/row-shape.ts";
import { tables, type RepoEventRow } from "../db/rows.generated.ts";
import { all, at, get, run, send, sql, statementOf, type Database, type Program } from "../db/sql.ts";
import type { EventLog, LoggedEvent, NewEvent, ReadLimits, RepoEventType } from "../sync/event-log.ts";
import { expiredRowsCleanup } from "./expired-rows.ts";
import { lockSequencer } from "./locks.ts";

/** Events older than the backfill window deleted per append: more than one, so deletion outpaces the one added. */
export const EVENT_PRUNE_BATCH = 20;
const pruneEvents = expiredRowsCleanup("RepoEvent", "seq", "time", EVENT_PRUNE_BATCH);

/** The advisory lock every append holds until its transaction ends (PostgreSQL): sequence order is commit order. */

/** The sequence number MAX or MIN finds (null when no row matches). */
const SEQ_OR_NULL = shape({ seq: "integer?" });

const EVENT_TYPES: ReadonlySet<string> = new Set<RepoEventType>(["commit", "sync", "identity", "account"]);

/** A stored event's type, as the sequencer wrote it (the column is text). */
function eventType(type: string): RepoEventType {
  if (!EVENT_TYPES.has(type)) throw new Error(`The event log holds an event of unknown type ${JSON.stringify(type)}`);
  return type as RepoEventType;
}

/**
 * Appends one event: a step of the transaction that makes the change it reports (a commit, an account's creation),
 * so that the change and its event land together. The lock is taken last, after every other lock of the
 * transaction, and held to its end: on PostgreSQL a sequence number is drawn at INSERT, not at COMMIT, so without
 * it a transaction that drew 7 could commit after one that drew 8, and a subscriber past 8 would never see 7.
 * SQLite's BEGIN IMMEDIATE already serialises every writer. A few events older than the backfill window go first
 * (lazy expiry, docs/architecture.md).
 */
export function* appendEvent(event: NewEvent, now: number, retentionMs: number): Program<number> {
  yield* lockSequencer();
  yield* run(pruneEvents(now - retentionMs));
  const row = yield* get(tables.RepoEvent.pick("seq"), sql`INSERT INTO "RepoEvent" ("did", "type", "body", "time")
    VALUES (${event.did}, ${event.type}, ${event.body}, ${at(now)}) RETURNING "seq"`);
  return row!.seq;
}

/**
 * appendEvent for a transaction that does not read the event's sequence number (a commit): the same lock, pruning
 * and row, but the prune and the insert are sent without waiting for their answers (sql.ts `send`), with the rest of
 * the transaction's last statements and its COMMIT (docs/decisions/0037, second amendment). The prune only when
 * `prune` says: a commit prunes on some of its process's commits, as its cleanup gate decides
 * (SqlRepoStore.applyCommit, docs/decisions/0037, amendment).
 */
export function* sendEvent(event: NewEvent, now: number, retentionMs: number, prune: boolean): Program<void> {
  yield* lockSequencer();
  if (prune) yield* send(pruneEvents(now - retentionMs));
  yield* send(sql`INSERT INTO "RepoEvent" ("did", "type", "body", "time") VALUES (${event.did}, ${event.type}, ${event.body}, ${at(now)})`);
}

/** Removes an account's events (its deletion), found by the index on "did". */
export const deleteEventsOf = statementOf(`DELETE FROM "RepoEvent" WHERE "did" = ?`);

/**
 * The events after a cursor within a read's limits (ReadLimits), in one statement on both engines: the running total
 * of the bodies' sizes, in seq order over at most `events` rows, keeps each row whose total is within `bytes`, and the
 * first row whatever its size. LENGTH of a blob is its size in bytes on both engines, read without the bytes
 * themselves (SQLite keeps it in the record's header; PostgreSQL's LENGTH(bytea) reads the stored size, not the
 * value), so the rows left out are never loaded.
 */
const eventsAfter = statementOf(`SELECT "seq", "did", "type", "body", "time" FROM (
    SELECT "seq", "did", "type", "body", "time",
      SUM(LENGTH("body")) OVER (ORDER BY "seq") AS "upTo", ROW_NUMBER() OVER (ORDER BY "seq") AS "n"
    FROM "RepoEvent" WHERE "seq" > ? ORDER BY "seq" LIMIT ?
  ) AS "batch" WHERE "upTo" <= ? OR "n" = 1 ORDER BY "seq"`);

/** The sequencer's log (app/.server/sync/event-log.ts), on either engine. */
export class SqlEventLog implements EventLog {
  constructor(
    private readonly db: Database,
    /** How long events are kept for replay (ATRIUM_FIREHOSE_BACKFILL_HOURS). */
    private readonly retentionMs: number,
  ) {}

  async after(cursor: number, limits: ReadLimits): Promise<LoggedEvent[]> {
    const rows = await this.db.execute(function* (): Program<RepoEventRow[]> {
      return yield* all(tables.RepoEvent, eventsAfter(cursor, limits.events, limits.bytes));
    });
    return rows.map((row) => ({ ...row, type: eventType(row.type) }));
  }

  async latestSeq(): Promise<number> {
    return this.db.execute(function* (): Program<number> {
      const row = yield* get(SEQ_OR_NULL, sql`SELECT MAX("seq") AS "seq" FROM "RepoEvent"`);
      return row?.seq ?? 0;
    });
  }

  async firstSeqSince(timeMs: number): Promise<number | undefined> {
    return this.db.execute(function* (): Program<number | undefined> {
      const row = yield* get(SEQ_OR_NULL, sql`SELECT MIN("seq") AS "seq" FROM "RepoEvent" WHERE "time" >= ${at(timeMs)}`);
      return row?.seq ?? undefined;
    });
  }

  async append(events: NewEvent[], now: number): Promise<number[]> {
    const retentionMs = this.retentionMs;
    return this.db.transaction(function* (): Program<number[]> {
      const seqs: number[] = [];
      for (const event of events) seqs.push(yield* appendEvent(event, now, retentionMs));
      return seqs;
    });
  }
}
