import diagnostics_channel from "node:diagnostics_channel";

/**
 * What the driver tells of each statement it sends to its engine, for whoever counts them (the statements-per-step
 * test, docs/decisions/0054): a Node diagnostics channel, so that a counter subscribes by name from anywhere in the
 * process, including across the build's own bundled copy of this module, and nothing is built or sent while no one
 * listens (each report is guarded by `statementsReported()`: a boolean read on the hot path).
 *
 * Every statement the engine runs on the server's behalf is reported, in the order it is sent: a store's statements,
 * and the driver's own BEGIN, COMMIT, ROLLBACK, advisory locks and unlocks (each a statement PostgreSQL runs and, on
 * their own, a round trip).
 */
export type StatementReport = {
  readonly engine: "sqlite" | "postgresql";
  /** The statement's SQL as the engine receives it. */
  readonly text: string;
  /**
   * The transaction, snapshot or atomic step the statement belongs to: one object for all of its statements, BEGIN and
   * COMMIT (or the step's locks and unlock) included; undefined for a statement run on its own.
   */
  readonly unit: object | undefined;
  /**
   * PostgreSQL: the statement is written ahead into the connection's corked socket and leaves with the next one that
   * is not, in one write (docs/decisions/0037, second amendment); false when it leaves at once, with those written
   * ahead of it. So the reports with `sentAhead` false are the driver's writes to PostgreSQL. Always false on SQLite.
   */
  readonly sentAhead: boolean;
};

/** The channel's name, for `diagnostics_channel.subscribe`. */
export const STATEMENT_CHANNEL = "atrium.db.statement";

const channel = diagnostics_channel.channel(STATEMENT_CHANNEL);

/** Whether anyone listens: checked before a report is built. */
export function statementsReported(): boolean {
  return channel.hasSubscribers;
}

export function reportStatement(report: StatementReport): void {
  channel.publish(report);
}
