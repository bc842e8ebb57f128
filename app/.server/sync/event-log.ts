/**
 * The repository event log (the "sequencer"): every change the network must
 * hear of, in the order it was committed, numbered from 1. The firehose
 * (com.atproto.sync.subscribeRepos) replays and tails it; commits, account
 * creation, handle changes and account status changes append to it.
 *
 * A commit's event is appended inside the commit's own write transaction, so
 * that a commit and its event land together or not at all; on PostgreSQL
 * the append takes a transaction-scoped lock so that sequence order is commit
 * order across processes and machines.
 */

/** The kinds of event subscribeRepos carries (the frame header's `t` is `#<type>`). */
export type RepoEventType = "commit" | "sync" | "identity" | "account";

/** One logged event. */
export type LoggedEvent = {
  /** Its sequence number: 1, 2, 3, … in commit order. */
  seq: number;
  did: string;
  type: RepoEventType;
  /**
   * The DAG-CBOR encoding of the event's body as the subscribeRepos lexicon
   * defines it, without `seq` (known only once appended): the firehose adds
   * it when it frames the event.
   */
  body: Uint8Array;
  /** When it was appended (epoch ms). */
  time: number;
};

/** What is appended: the body as above, without `seq`. */
export type NewEvent = { did: string; type: RepoEventType; body: Uint8Array };

/**
 * How much one read of the log may bring into memory: at most `events` events, and at most `bytes` bytes of their
 * bodies, except that an event larger than `bytes` comes alone (otherwise it could never be read).
 */
export type ReadLimits = { events: number; bytes: number };

export interface EventLog {
  /** Events with `seq` greater than `cursor`, in order, from the first on, as many as `limits` allow. */
  after(cursor: number, limits: ReadLimits): Promise<LoggedEvent[]>;
  /** The newest event's `seq`, or 0 when the log is empty. */
  latestSeq(): Promise<number>;
  /** The first `seq` appended at or after `timeMs` (the start of the backfill window), or undefined when none. */
  firstSeqSince(timeMs: number): Promise<number | undefined>;
  /**
   * Appends events on their own, in order; their `seq`s. The server appends its events in the transaction of the
   * write they announce (a commit, an account's status, its deletion, a handle change: SqlRepoStore and the deletion
   * store); this is how the firehose's tests feed a log.
   */
  append(events: NewEvent[], now: number): Promise<number[]>;
}
