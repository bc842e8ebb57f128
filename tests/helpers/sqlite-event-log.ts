import Database from "better-sqlite3";
import type { AppendSignal } from "../../app/.server/sync/append-signal.ts";
import type { EventLog, LoggedEvent, NewEvent, RepoEventType } from "../../app/.server/sync/event-log.ts";

/**
 * The event log's contract over a SQLite file of its own, shared by several
 * processes: what the firehose's cross-process tests need until the
 * server's own SQL log (in its database, appended in each commit's
 * transaction) serves them. seq is the rowid, so appends (serialised by
 * SQLite's write lock) are numbered in commit order from 1.
 */
export class SqliteEventLog implements EventLog {
  private readonly db: Database.Database;

  constructor(
    file: string,
    private readonly signal?: AppendSignal,
  ) {
    this.db = new Database(file);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("busy_timeout = 5000");
    this.db.exec("CREATE TABLE IF NOT EXISTS event (seq INTEGER PRIMARY KEY AUTOINCREMENT, did TEXT NOT NULL, type TEXT NOT NULL, body BLOB NOT NULL, time INTEGER NOT NULL)");
    this.db.exec("CREATE INDEX IF NOT EXISTS event_time ON event (time)");
  }

  async after(cursor: number, limit: number): Promise<LoggedEvent[]> {
    const rows = this.db.prepare("SELECT seq, did, type, body, time FROM event WHERE seq > ? ORDER BY seq LIMIT ?").all(cursor, limit) as Array<{
      seq: number;
      did: string;
      type: RepoEventType;
      body: Buffer;
      time: number;
    }>;
    return rows.map((row) => ({ ...row, body: new Uint8Array(row.body) }));
  }

  async latestSeq(): Promise<number> {
    return (this.db.prepare("SELECT max(seq) AS seq FROM event").get() as { seq: number | null }).seq ?? 0;
  }

  async firstSeqSince(timeMs: number): Promise<number | undefined> {
    return (this.db.prepare("SELECT min(seq) AS seq FROM event WHERE time >= ?").get(timeMs) as { seq: number | null }).seq ?? undefined;
  }

  async append(events: NewEvent[], now: number): Promise<number[]> {
    const insert = this.db.prepare("INSERT INTO event (did, type, body, time) VALUES (?, ?, ?, ?)");
    const seqs = this.db.transaction(() => events.map((event) => Number(insert.run(event.did, event.type, Buffer.from(event.body), now).lastInsertRowid)))();
    this.signal?.notify();
    return seqs;
  }

  close(): void {
    this.db.close();
  }
}
