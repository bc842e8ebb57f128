import type { EventLog, LoggedEvent, ReadLimits } from "./event-log.ts";
import { errorFrame, eventFrame, infoFrame, type StreamErrorName } from "./frames.ts";

/**
 * com.atproto.sync.subscribeRepos, framework-free (docs/decisions/0029): one
 * per process, serving that process's subscribers from the event log, which
 * every process and machine on the database appends to.
 *
 * A subscriber with a cursor first replays from the log at its own pace, then
 * joins the live set; the live set is fed by one tail per process that reads
 * the log for `seq > head` while anyone is subscribed: at once when this
 * process appended (`appended()`), otherwise every poll interval (events
 * other processes committed). The switch from replay to live is synchronous
 * with the tail's delivery (both compare with `head` without awaiting in
 * between), and every delivery skips what a subscriber already has, so each
 * subscriber sees every seq once, in order.
 */

/** The socket, as the firehose needs it (the entry adapts a ws WebSocket). */
export interface StreamSocket {
  /** Queues a binary message; `written` runs once it has been handed to the operating system (or the socket failed). */
  send(frame: Uint8Array, written?: () => void): void;
  /** Bytes queued in this process and not yet handed to the operating system. */
  readonly bufferedAmount: number;
  /** Closes after what is queued (a WebSocket close frame). */
  close(code: number, reason: string): void;
}

export type FirehoseSettings = {
  /** How far back a cursor may replay (ATRIUM_FIREHOSE_BACKFILL_HOURS). */
  backfillMs: number;
  /** A subscriber whose queued bytes would pass this is cut off with ConsumerTooSlow (ATRIUM_FIREHOSE_MAX_BUFFER_BYTES). */
  maxBufferedBytes: number;
  /** How often the tail reads the log for other processes' events while anyone is subscribed (ATRIUM_FIREHOSE_POLL_MS). */
  pollIntervalMs: number;
  /** How much one read of the log brings into memory, by the tail and by each replay: events, and bytes of their bodies. */
  batch: ReadLimits;
};

/** WebSocket close codes (RFC 6455 §7.4.1): 1008 "a message that violates its policy", 1001 "going away". */
const POLICY_VIOLATION = 1008;
const GOING_AWAY = 1001;
/** The most bytes of recent frames kept for reuse. */
const FRAME_CACHE_BYTES = 4 * 1024 * 1024;

class Subscription {
  /** The last seq sent (or skipped as before the window). */
  lastSent = 0;
  closed = false;
  constructor(readonly socket: StreamSocket) {}
}

export class Firehose {
  private readonly everyone = new Set<Subscription>();
  private readonly live = new Set<Subscription>();
  /** The last seq the tail delivered to the live set; undefined while the tail is stopped. */
  private head: number | undefined;
  private starting: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private wakeRequested = false;
  private stopped = false;
  /** The tail's last read failed (reported once until one succeeds). */
  private failing = false;
  /** Frames of recent events, so that replaying subscribers and the tail encode each event once. */
  private readonly frames = new Map<number, Uint8Array>();
  private cachedBytes = 0;

  constructor(
    private readonly log: EventLog,
    private readonly settings: FirehoseSettings,
    private readonly now: () => number,
    private readonly report: (message: string, error: unknown) => void,
  ) {}

  /** How many sockets are subscribed, and the most bytes any of them has queued right now. */
  stats(): { subscribers: number; maxBufferedBytes: number } {
    let max = 0;
    for (const subscription of this.everyone) max = Math.max(max, subscription.socket.bufferedAmount);
    return { subscribers: this.everyone.size, maxBufferedBytes: max };
  }

  /**
   * The newest event now: where a subscription without a cursor starts (server/firehose-upgrade.ts). The tail's head
   * while it runs (every event up to it went to the live set), else the log's.
   */
  async newestSeq(): Promise<number> {
    return this.head ?? (await this.log.latestSeq());
  }

  /** This process appended events (a commit, an account change): the tail reads them now rather than at its next poll. */
  appended(): void {
    this.wakeRequested = true;
    this.wake?.();
  }

  /**
   * Serves a socket. `cursor` undefined: live events only. `ready` resolves
   * once it is live or closed; the entry calls `ended` when the socket closes.
   */
  subscribe(socket: StreamSocket, cursor: number | undefined): { ready: Promise<void>; ended: () => void } {
    const subscription = new Subscription(socket);
    const ended = () => this.drop(subscription);
    if (this.stopped) {
      socket.close(GOING_AWAY, "Server shutting down");
      return { ready: Promise.resolve(), ended };
    }
    this.everyone.add(subscription);
    return { ready: this.start(subscription, cursor), ended };
  }

  private async start(subscription: Subscription, cursor: number | undefined): Promise<void> {
    try {
      await this.startTail();
      if (cursor === undefined) this.goLive(subscription, this.head!);
      else await this.replay(subscription, cursor);
    } catch (error) {
      this.report("Serving a firehose subscriber failed", error);
      this.cutOff(subscription, "InternalServerError", "The server could not read its event log");
    }
  }

  /** At shutdown: every subscriber gets a close frame, and the tail stops. */
  close(): void {
    this.stopped = true;
    for (const subscription of [...this.everyone]) {
      subscription.socket.close(GOING_AWAY, "Server shutting down");
      this.drop(subscription);
    }
    this.wake?.();
  }

  private drop(subscription: Subscription): void {
    subscription.closed = true;
    this.everyone.delete(subscription);
    this.live.delete(subscription);
  }

  private goLive(subscription: Subscription, lastSent: number): void {
    if (subscription.closed) return;
    subscription.lastSent = lastSent;
    this.live.add(subscription);
  }

  /**
   * Replay from `cursor`. The subscribeRepos lexicon: `cursor` is "the last
   * known event seq number to backfill from". The event stream spec: the
   * backfill window's intent "is to ensure reliable delivery of events
   * following disruptions during a reasonable time window (eg, hours or
   * days). It is not to enable clients to roll all the way back to the
   * beginning of the stream": an older cursor gets the #info OutdatedCursor
   * and starts at the window's first event; a cursor past the newest event
   * is the FutureCursor error.
   */
  private async replay(subscription: Subscription, cursor: number): Promise<void> {
    const latest = Math.max(this.head!, await this.log.latestSeq());
    if (cursor > latest) {
      this.cutOff(subscription, "FutureCursor", `Cursor ${cursor} is past the newest event (${latest})`);
      return;
    }
    const windowStart = (await this.log.firstSeqSince(this.now() - this.settings.backfillMs)) ?? latest + 1;
    let position = cursor;
    if (cursor < windowStart - 1) {
      subscription.socket.send(infoFrame("OutdatedCursor", "Requested cursor is older than the backfill window; some events are missing"));
      position = windowStart - 1;
    }
    subscription.lastSent = position;
    await this.catchUp(subscription);
  }

  /**
   * Sends from the log until the subscriber reaches the tail's head, then joins the live set in the same tick. Replay
   * reads the log as fast as the consumer takes it: one batch (bounded by the read limits), each event let go once
   * framed and queued, and the next batch only once the socket has handed this one to the operating system. What a
   * replaying subscriber holds in this process is so at most one batch, whatever it does (docs/decisions/0044).
   */
  private async catchUp(subscription: Subscription): Promise<void> {
    for (;;) {
      if (subscription.closed) return;
      if (subscription.lastSent >= this.head!) return this.goLive(subscription, subscription.lastSent);
      const events = await this.log.after(subscription.lastSent, this.settings.batch);
      // Nothing left although head is further (rows pruned meanwhile): what remains comes live.
      if (events.length === 0) return this.goLive(subscription, Math.max(subscription.lastSent, this.head!));
      await this.sendBatch(subscription, events);
    }
  }

  /** Queues a replayed batch, emptying `events` as it goes; resolves once its last frame is written out (or the socket failed). */
  private sendBatch(subscription: Subscription, events: LoggedEvent[]): Promise<void> {
    return new Promise((resolve) => {
      for (let event = events.shift(); event && !subscription.closed; event = events.shift()) {
        subscription.lastSent = event.seq;
        subscription.socket.send(this.frameOf(event), events.length === 0 ? resolve : undefined);
      }
      // Closed midway: nothing more to wait for.
      if (subscription.closed) resolve();
    });
  }

  private startTail(): Promise<void> {
    this.starting ??= this.log.latestSeq().then(
      (latest) => {
        this.head = latest;
        void this.runTail();
      },
      (error: unknown) => {
        // The next subscriber tries again (the database may be back by then).
        this.starting = undefined;
        throw error;
      },
    );
    return this.starting;
  }

  /** The tail: reads new events and hands them to the live set while anyone is subscribed. */
  private async runTail(): Promise<void> {
    while (this.everyone.size > 0 && !this.stopped) {
      this.wakeRequested = false;
      let events: LoggedEvent[] = [];
      try {
        events = await this.log.after(this.head!, this.settings.batch);
        this.failing = false;
      } catch (error) {
        // Once per outage, not once per poll; the tail keeps polling and resumes where it was.
        if (!this.failing) this.report("Reading the event log for the firehose failed", error);
        this.failing = true;
      }
      // A read that found events may have stopped at a limit: the next one comes at once, until the log has no more.
      if (events.length > 0) this.deliver(events);
      else await this.nextWake();
    }
    // Stopped with nobody subscribed: the next subscriber starts the tail again from the log's newest seq.
    this.head = undefined;
    this.starting = undefined;
  }

  /** Resolves after the poll interval, or as soon as `appended()` is called (including since the last read began). */
  private nextWake(): Promise<void> {
    if (this.wakeRequested || this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, this.settings.pollIntervalMs);
      const wake = () => done();
      this.wake = wake;
      function done() {
        clearTimeout(timer);
        resolve();
      }
    }).finally(() => (this.wake = undefined));
  }

  /**
   * Synchronous, with `head` moved in the same tick, so that a subscriber joining the live set misses nothing. Empties
   * `events` as it goes: each event's body is let go once its frame is made.
   */
  private deliver(events: LoggedEvent[]): void {
    for (let event = events.shift(); event; event = events.shift()) {
      if (event.seq <= this.head!) continue;
      const frame = this.frameOf(event);
      for (const subscription of this.live) {
        if (event.seq > subscription.lastSent) this.sendLive(subscription, frame, event.seq);
      }
      this.head = event.seq;
    }
  }

  /**
   * The subscribeRepos lexicon's ConsumerTooSlow: "If the consumer of the
   * stream can not keep up with events, and a backlog gets too large, the
   * server will drop the connection." The bound is checked before queuing,
   * so a subscriber's queue never holds more than the bound (and the small
   * error frame).
   */
  private sendLive(subscription: Subscription, frame: Uint8Array, seq: number): void {
    if (subscription.socket.bufferedAmount + frame.length > this.settings.maxBufferedBytes) {
      this.cutOff(subscription, "ConsumerTooSlow", "The stream's backlog for this connection grew too large");
      return;
    }
    subscription.socket.send(frame);
    subscription.lastSent = seq;
  }

  /** An error frame, then the close; the subscriber is gone from here at once. */
  private cutOff(subscription: Subscription, error: StreamErrorName, message: string): void {
    if (subscription.closed) return;
    subscription.socket.send(errorFrame(error, message));
    subscription.socket.close(POLICY_VIOLATION, error);
    this.drop(subscription);
  }

  private frameOf(event: LoggedEvent): Uint8Array {
    let frame = this.frames.get(event.seq);
    if (!frame) {
      frame = eventFrame(event);
      this.frames.set(event.seq, frame);
      this.cachedBytes += frame.length;
      this.forgetOldFrames();
    }
    return frame;
  }

  /**
   * Keeps the frames made last, up to one batch's count and FRAME_CACHE_BYTES (Map iterates in insertion order: the
   * oldest go first): replays running side by side, or close behind the tail, reuse them; others frame again.
   */
  private forgetOldFrames(): void {
    for (const [seq, frame] of this.frames) {
      if (this.frames.size <= this.settings.batch.events && this.cachedBytes <= FRAME_CACHE_BYTES) break;
      this.frames.delete(seq);
      this.cachedBytes -= frame.length;
    }
  }
}
