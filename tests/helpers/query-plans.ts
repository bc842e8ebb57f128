import type { Database } from "../../app/.server/db/sql.ts";
import { PostgresDatabase } from "../../app/.server/db/postgres-database.ts";
import { SqliteDatabase } from "../../app/.server/db/sqlite-database.ts";

/**
 * How each engine plans a statement, for the tests that require an index
 * (lazy expiry, the blob quota's sum). Statements are text with `?` for each
 * parameter, as deleteExpiredSql and BLOB_SQL write them.
 */

/** SQLite's EXPLAIN QUERY PLAN, one detail line per step ("SEARCH Blob USING INDEX …"). */
export function sqlitePlan(db: Database, text: string, ...values: unknown[]): string[] {
  if (!(db instanceof SqliteDatabase)) throw new Error("sqlitePlan needs a SQLite database");
  return (db.connection.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...values) as { detail: string }[]).map((row) => row.detail);
}

/** One node of a PostgreSQL plan, with what the index tests look at. */
export type PlanNode = { nodeType: string; relation?: string; index?: string; indexCond?: string };

/**
 * PostgreSQL's plan of a statement, every node flattened. Sequential scans are
 * switched off for the one transaction the EXPLAIN runs in: the test tables are
 * nearly empty, and the planner would otherwise scan them whatever their
 * indexes. With them off, a scan still appears when no index can serve.
 * `options.off` switches off more plan types (enable_bitmapscan, to see
 * whether an index can answer alone).
 */
export async function postgresPlan(db: Database, text: string, values: unknown[], options: { off?: string[] } = {}): Promise<PlanNode[]> {
  if (!(db instanceof PostgresDatabase)) throw new Error("postgresPlan needs a PostgreSQL database");
  const client = await db.pool.connect();
  try {
    await client.query("BEGIN");
    for (const setting of ["enable_seqscan", ...(options.off ?? [])]) {
      if (!/^enable_\w+$/.test(setting)) throw new Error(`${setting} is not a planner setting`);
      await client.query(`SET LOCAL ${setting} = off`);
    }
    let n = 0;
    const result = await client.query<{ "QUERY PLAN": [{ Plan: RawNode }] }>(`EXPLAIN (FORMAT JSON) ${text.replace(/\?/g, () => `$${++n}`)}`, values);
    const nodes: PlanNode[] = [];
    const walk = (node: RawNode) => {
      nodes.push({ nodeType: node["Node Type"], relation: node["Relation Name"], index: node["Index Name"], indexCond: node["Index Cond"] });
      for (const child of node.Plans ?? []) walk(child);
    };
    walk(result.rows[0]!["QUERY PLAN"][0].Plan);
    return nodes;
  } finally {
    await client.query("ROLLBACK");
    client.release();
  }
}

type RawNode = { "Node Type": string; "Relation Name"?: string; "Index Name"?: string; "Index Cond"?: string; Plans?: RawNode[] };
