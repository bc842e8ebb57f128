import { at, statementOf, type Statement } from "../db/sql.ts";

/**
 * Lazy expiry (docs/architecture.md, "Lazy expiry"): each insert into a table of short-lived rows
 * first deletes a few of its expired rows, so tables stay bounded without a
 * sweeper. The batch is larger than one, so deletion outpaces insertion.
 * Every table's expiry column is indexed (tested in expired-rows.test.ts):
 * without the index this statement reads the whole table on every insert.
 */
export const CLEANUP_BATCH = 20;

/** The cleanup's SQL, one `?` for the cutoff. `keyColumns`: the primary key (several for a composite one). */
export function deleteExpiredSql(table: string, keyColumns: string | readonly string[], expiryColumn = "expiresAt", batch = CLEANUP_BATCH): string {
  const keys = [keyColumns].flat().map((column) => `"${column}"`);
  const key = keys.length > 1 ? `(${keys.join(", ")})` : keys[0];
  return `DELETE FROM "${table}" WHERE ${key} IN (SELECT ${keys.join(", ")} FROM "${table}" WHERE "${expiryColumn}" <= ? LIMIT ${batch})`;
}

/** The cleanup as a statement of the store programs: deletes up to `batch` rows that expired at or before `cutoff`. */
export function expiredRowsCleanup(...args: Parameters<typeof deleteExpiredSql>): (cutoff: number) => Statement {
  const statement = statementOf(deleteExpiredSql(...args));
  return (cutoff) => statement(at(cutoff));
}
