import { at, Fragment, statementOf, type Statement } from "../db/sql.ts";

/**
 * Lazy expiry (docs/architecture.md, "Lazy expiry"): each insert into a table of short-lived rows
 * first deletes a few of its expired rows, so tables stay bounded without a
 * sweeper. The batch is larger than one, so deletion outpaces insertion.
 * Every table's expiry column is indexed (tested in expired-rows.test.ts):
 * without the index this statement reads the whole table on every insert.
 */
export const CLEANUP_BATCH = 20;

/**
 * The cleanup's SQL, two `?` for the cutoff (the same value twice). `keyColumns`: the primary key (several for a
 * composite one).
 *
 * The expiry is tested twice on purpose (docs/decisions/0040). The subquery picks a batch of expired rows by the index;
 * the outer test keeps a row that another transaction renewed meanwhile: on PostgreSQL (READ COMMITTED) a DELETE that
 * waited for a concurrent update re-checks only its own WHERE against the row's new version, not the subquery, so
 * without it a rate-limit window just restarted, or a blob just referenced again, would be deleted as it was. The
 * outer test is written as an expression no index matches (`stillExpired`), so that the rows are reached through the
 * batch's keys: with the column itself, PostgreSQL could drive the delete from the expiry index instead and read every
 * expired row to delete a batch (found in review: 3.4 s on 200,000 rows whose statistics were taken while they lived).
 */
export function deleteExpiredSql(table: string, keyColumns: string | readonly string[], expiryColumn = "expiresAt", batch = CLEANUP_BATCH): string {
  const keys = [keyColumns].flat().map((column) => `"${column}"`);
  const key = keys.length > 1 ? `(${keys.join(", ")})` : keys[0];
  return `DELETE FROM "${table}" WHERE ${stillExpired(expiryColumn)} <= ? AND ${key} IN (SELECT ${keys.join(", ")} FROM "${table}" WHERE "${expiryColumn}" <= ? LIMIT ${batch})`;
}

/**
 * A cleanup's outer expiry test (deleteExpiredSql): the column as an expression that no index matches on either engine,
 * so that the planner cannot choose the expiry index for it, and PostgreSQL re-checks it after waiting for a row.
 */
export function stillExpired(expiryColumn: string): string {
  return `COALESCE("${expiryColumn}", "${expiryColumn}")`;
}

/** stillExpired as fragments, for the cleanups written inside a store's own statement (its PostgreSQL CTEs). */
export const STILL_EXPIRES_AT = new Fragment({ sqlite: stillExpired("expiresAt"), postgresql: stillExpired("expiresAt") });
export const STILL_PURGE_AT = new Fragment({ sqlite: stillExpired("purgeAt"), postgresql: stillExpired("purgeAt") });

/** A cleanup a store runs: its table, the column its rows expire by, and its SQL (deleteExpiredSql's, two `?`). */
export type ExpiryCleanup = { table: string; expiry: string; text: string };

/**
 * Every cleanup made by expiredRowsCleanup, as the stores' modules load: the test that requires an index for each
 * (expired-rows.test.ts) reads them here, whatever column a table expires by (the event log's is "time").
 */
export const EXPIRY_CLEANUPS: ExpiryCleanup[] = [];

/** The cleanup as a statement of the store programs: deletes up to `batch` rows that expired at or before `cutoff`. */
export function expiredRowsCleanup(...args: Parameters<typeof deleteExpiredSql>): (cutoff: number) => Statement {
  const text = deleteExpiredSql(...args);
  EXPIRY_CLEANUPS.push({ table: args[0], expiry: args[2] ?? "expiresAt", text });
  const statement = statementOf(text);
  return (cutoff) => statement(at(cutoff), at(cutoff));
}

/**
 * Lazy expiry on some writes of a frequent kind rather than on each (docs/decisions/0037, amendment of 2026-11-26):
 * a gate per process. `due()` is asked once per write, before its transaction, and answers true on the first write and
 * then on every `every`-th; `missed()` is told when a write that was due did not commit (rolled back, or a
 * compare-and-swap lost), and the next write is due instead. So each process runs the cleanup on at least one of any
 * `every` consecutive writes it starts, whatever other processes do, and a row past its expiry waits for at most
 * `every` writes of any one writing process beyond what cleaning on every write would leave. A cleanup batch larger
 * than `every` keeps deletion outpacing insertion (one row per write).
 */
export class CleanupGate {
  /** Writes since the last one that was due; the first write is due. */
  private since: number;

  constructor(private readonly every: number) {
    if (!Number.isInteger(every) || every < 1) throw new Error(`A cleanup gate runs on every n-th write, n ≥ 1; got ${every}`);
    this.since = every - 1;
  }

  due(): boolean {
    if (this.since >= this.every - 1) {
      this.since = 0;
      return true;
    }
    this.since++;
    return false;
  }

  missed(): void {
    this.since = this.every - 1;
  }
}
