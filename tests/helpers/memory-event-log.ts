import type { AppendSignal } from "../../app/.server/sync/append-signal.ts";
import type { EventLog, LoggedEvent, NewEvent } from "../../app/.server/sync/event-log.ts";

/**
 * The event log's contract (app/.server/sync/event-log.ts) in memory, for the
 * firehose's tests until the SQL log serves them: seqs from 1, in append
 * order, `after` in seq order. Every append tells the process's AppendSignal,
 * as committing code does after its transaction.
 */
export class MemoryEventLog implements EventLog {
  readonly events: LoggedEvent[] = [];

  constructor(private readonly signal?: AppendSignal) {}

  async after(cursor: number, limit: number): Promise<LoggedEvent[]> {
    const start = this.events.findIndex((event) => event.seq > cursor);
    return start < 0 ? [] : this.events.slice(start, start + limit);
  }

  async latestSeq(): Promise<number> {
    return this.events.at(-1)?.seq ?? 0;
  }

  async firstSeqSince(timeMs: number): Promise<number | undefined> {
    return this.events.find((event) => event.time >= timeMs)?.seq;
  }

  async append(events: NewEvent[], now: number): Promise<number[]> {
    const seqs = events.map((event) => {
      const seq = (this.events.at(-1)?.seq ?? 0) + 1;
      this.events.push({ ...event, seq, time: now });
      return seq;
    });
    this.signal?.notify();
    return seqs;
  }
}
