/**
 * The repository exports in progress in this process (docs/decisions/0042): com.atproto.sync.getRepo, getBlocks, and a
 * record's proof read from a snapshot. Each holds a database snapshot while its client reads, so they are capped at
 * once per client address (its limit bucket: an IPv6 /64) and in all, and each is ended when its client has taken no
 * byte for `idleMs`, or `maxMs` after it began, whatever its client does. Time is the injected clock's, read by
 * `sweep`, which a timer calls (`start`) and tests call themselves. Counted in memory: an export lives in one process,
 * so with several processes (ATRIUM_WORKERS) an address may hold its cap in each.
 */

export type ExportLimits = {
  /** Exports at once per limit bucket (docs/decisions/0042). */
  perAddress: number;
  /** Exports at once in this process. */
  inAll: number;
  /** An export whose client took nothing for this long is ended. */
  idleMs: number;
  /** An export is ended this long after it began. */
  maxMs: number;
};

/** Why an export ended before its end: the reason its stream errors with, and its snapshot is released for. */
export class ExportEnded extends Error {
  constructor(
    readonly reason: "idle" | "deadline" | "shutdown",
    message: string,
  ) {
    super(message);
  }
}

/** What the metrics read of the exports (server/metrics.ts). */
export type ExportState = {
  /** Exports in progress. */
  open: number;
  /** Block bytes the exports in progress have read from the database and not yet handed to their CAR. */
  heldBytes: number;
  /** Block bytes read from the database by exports since the process started. */
  bytesRead: number;
};

/** One export in progress: its place under the caps, its clock, and the signal that ends it. */
export class ExportTicket {
  private readonly controller = new AbortController();
  /** Aborted when the export ends, however: its end, its client gone, a timeout. The reason is an ExportEnded when ended early. */
  readonly signal = this.controller.signal;
  readonly startedAt: number;
  lastProgressAt: number;
  /** Block bytes read from the database and not yet handed to the CAR. */
  heldBytes = 0;

  constructor(
    readonly bucket: string,
    private readonly watch: ExportWatch,
    now: number,
  ) {
    this.startedAt = now;
    this.lastProgressAt = now;
  }

  /** The client took bytes: the idle time starts again. */
  progress(): void {
    this.lastProgressAt = this.watch.now();
  }

  /** `bytes` of blocks were read from the database for this export. */
  read(bytes: number): void {
    this.heldBytes += bytes;
    this.watch.counted(bytes);
  }

  /** `bytes` of those were handed to the CAR (the stream that the client's socket takes from). */
  handedOn(bytes: number): void {
    this.heldBytes -= bytes;
  }

  /** Ends the export (again: nothing): frees its place, and aborts its signal with `reason` (undefined: it is over). */
  end(reason?: ExportEnded): void {
    if (this.signal.aborted) return;
    this.watch.ended(this);
    this.controller.abort(reason);
  }
}

export class ExportWatch {
  private readonly tickets = new Set<ExportTicket>();
  private readonly perBucket = new Map<string, number>();
  private bytesRead = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly limits: ExportLimits,
    readonly now: () => number,
    private readonly onEndedEarly: (ticket: ExportTicket, reason: ExportEnded) => void = () => {},
  ) {}

  /** A place for an export from `bucket`; undefined when the bucket or the process is at its cap (nothing was taken). */
  admit(bucket: string): ExportTicket | undefined {
    const taken = this.perBucket.get(bucket) ?? 0;
    if (taken >= this.limits.perAddress || this.tickets.size >= this.limits.inAll) return undefined;
    this.perBucket.set(bucket, taken + 1);
    const ticket = new ExportTicket(bucket, this, this.now());
    this.tickets.add(ticket);
    return ticket;
  }

  /** Ends every export whose client took nothing for idleMs, and every one that began maxMs ago or more. */
  sweep(): void {
    const now = this.now();
    for (const ticket of [...this.tickets]) {
      if (now - ticket.startedAt >= this.limits.maxMs) this.endEarly(ticket, new ExportEnded("deadline", `The export took longer than its ${this.limits.maxMs / 1000} s`));
      else if (now - ticket.lastProgressAt >= this.limits.idleMs) this.endEarly(ticket, new ExportEnded("idle", `The client took nothing for ${this.limits.idleMs / 1000} s`));
    }
  }

  /** Sweeps every `intervalMs` (a timer that keeps no process alive) until closed. */
  start(intervalMs: number): void {
    this.timer ??= setInterval(() => this.sweep(), intervalMs).unref();
  }

  /** Stops sweeping and ends every export in progress (shutdown). */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    for (const ticket of [...this.tickets]) this.endEarly(ticket, new ExportEnded("shutdown", "The server is stopping"));
  }

  state(): ExportState {
    let heldBytes = 0;
    for (const ticket of this.tickets) heldBytes += ticket.heldBytes;
    return { open: this.tickets.size, heldBytes, bytesRead: this.bytesRead };
  }

  /** @internal ExportTicket's: its bytes read, counted for the process. */
  counted(bytes: number): void {
    this.bytesRead += bytes;
  }

  /** @internal ExportTicket's: its place is free again. */
  ended(ticket: ExportTicket): void {
    if (!this.tickets.delete(ticket)) return;
    const left = (this.perBucket.get(ticket.bucket) ?? 1) - 1;
    if (left <= 0) this.perBucket.delete(ticket.bucket);
    else this.perBucket.set(ticket.bucket, left);
  }

  private endEarly(ticket: ExportTicket, reason: ExportEnded): void {
    ticket.end(reason);
    this.onEndedEarly(ticket, reason);
  }
}
