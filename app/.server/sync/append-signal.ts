/**
 * "Events were appended to the log, in this process": what the code that
 * appends (commits, account changes) tells the firehose, so that it reads
 * them at once instead of at its next poll, and the crawler notifier
 * (docs/decisions/0029). Events other processes append are found by polling.
 */
export class AppendSignal {
  private readonly listeners = new Set<() => void>();

  /** Adds a listener; returns its removal. */
  listen(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Call after the transaction that appended has committed. */
  notify(): void {
    for (const listener of this.listeners) listener();
  }
}
