import { SnapshotReleased, type HeldSnapshot, type Program } from "./sql.ts";

/** What an engine does for a held snapshot: run one program on the snapshot's connection, and end it. */
export type SnapshotConnection = {
  run<T>(program: Program<T>): Promise<T>;
  /** Ends the read transaction and lets the connection go; `failure`: a read failed (the connection may be broken). Never throws. */
  end(failure: unknown): Promise<void>;
};

/**
 * Database.holdSnapshot's promises on either engine (docs/decisions/0042): reads one at a time in the order asked (a
 * connection runs one statement at a time, and a read must not see another half done), a failed read releases the
 * snapshot, and the end happens once, after the reads asked before it, whoever asks first.
 */
export class SerialSnapshot implements HeldSnapshot {
  private queue: Promise<unknown> = Promise.resolve();
  private released = false;
  private ended: Promise<void> | undefined;

  constructor(private readonly connection: SnapshotConnection) {}

  read<T>(program: () => Program<T>): Promise<T> {
    // Asked before the release: it runs (its turn comes before the end); after: refused.
    if (this.released) return Promise.reject(new SnapshotReleased());
    const result = this.queue.then(async () => {
      // Ended meanwhile by a read that failed before this one's turn.
      if (this.ended) throw new SnapshotReleased();
      try {
        return await this.connection.run(program());
      } catch (error) {
        await this.end(error);
        throw error;
      }
    });
    this.queue = result.catch(() => undefined);
    return result;
  }

  release(): Promise<void> {
    // Reads asked for after this throw SnapshotReleased; those asked before finish first.
    this.released = true;
    return this.queue.then(() => this.end(undefined));
  }

  private end(failure: unknown): Promise<void> {
    this.released = true;
    this.ended ??= this.connection.end(failure);
    return this.ended;
  }
}
