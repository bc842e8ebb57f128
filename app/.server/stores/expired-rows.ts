/**
 * Lazy expiry (docs/architecture.md, "Lazy expiry"): each insert into a table of short-lived rows
 * first deletes a few of its expired rows, so tables stay bounded without a
 * sweeper. The batch is larger than one, so deletion outpaces insertion.
 * Every table's expiry column is indexed (tested in expired-rows.test.ts):
 * without the index this statement reads the whole table on every insert.
 */
export const CLEANUP_BATCH = 20;

export function deleteExpiredSql(table: string, keyColumn: string, expiryColumn = "expiresAt", batch = CLEANUP_BATCH): string {
  return `DELETE FROM "${table}" WHERE ${keyColumn} IN (SELECT ${keyColumn} FROM "${table}" WHERE ${expiryColumn} <= ? LIMIT ${batch})`;
}
