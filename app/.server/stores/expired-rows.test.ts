import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENGINES, execute, openTestDatabase, rowsOf, type TestDatabase } from "../../../tests/helpers/databases.ts";
import { postgresPlan, sqlitePlan } from "../../../tests/helpers/query-plans.ts";
import { at, sql } from "../db/sql.ts";
import { CleanupGate, deleteExpiredSql, EXPIRY_CLEANUPS } from "./expired-rows.ts";
import { BLOB_SQL } from "./sql-blob-store.ts";
import { REQUEST_SQL } from "./sql-request-store.ts";

type ExpiringTable = { table: string; key: string; expiry: string };

// Every store module, so that each cleanup it makes at load is in EXPIRY_CLEANUPS.
import.meta.glob(["./sql-*.ts", "!./*.test.ts"], { eager: true });

/** A cutoff as each engine binds a time (the plans do not depend on its value). */
const CUTOFF = { sqlite: 0, postgresql: new Date(0).toISOString() };

/**
 * Lazy expiry (docs/architecture.md, "Lazy expiry"): every insert into a table of short-lived rows
 * deletes a few expired ones first. Without an index on the expiry column that
 * delete reads the whole table each time — a refresh cost grew with every
 * token ever issued until this was caught — so each such table in the
 * migrated schema must let the cleanup search an index, on each engine's own
 * migrations. On PostgreSQL sequential scans are switched off for the EXPLAIN
 * (tests/helpers/query-plans.ts): the tables are empty here, and the planner
 * would scan them whatever their indexes.
 */
describe.each(ENGINES)("expired-row cleanup uses an index on every expiring table, on %s", (engine) => {
  let test: TestDatabase;
  beforeAll(async () => {
    test = await openTestDatabase(engine);
  });
  afterAll(() => test.close());

  /** Every table with an expiry column and a primary key, as the migrations made them. */
  const expiringTables = async (): Promise<ExpiringTable[]> => {
    if (engine === "postgresql") {
      return rowsOf<ExpiringTable>(test.db, sql`SELECT c."table_name" AS "table", k."column_name" AS "key", c."column_name" AS "expiry"
        FROM information_schema.columns c
        JOIN information_schema.table_constraints t
          ON t."table_schema" = c."table_schema" AND t."table_name" = c."table_name" AND t."constraint_type" = 'PRIMARY KEY'
        JOIN information_schema.key_column_usage k
          ON k."constraint_schema" = t."constraint_schema" AND k."constraint_name" = t."constraint_name" AND k."ordinal_position" = 1
        WHERE c."table_schema" = current_schema() AND c."column_name" IN ('expiresAt', 'windowEndsAt', 'purgeAt')
          -- A table with "purgeAt" is cleaned up by it (docs/decisions/0022); its "expiresAt" is not the cleanup's.
          AND NOT (c."column_name" = 'expiresAt' AND EXISTS (SELECT 1 FROM information_schema.columns p
            WHERE p."table_schema" = c."table_schema" AND p."table_name" = c."table_name" AND p."column_name" = 'purgeAt'))
        ORDER BY c."table_name"`);
    }
    const tables = await rowsOf<{ name: string }>(
      test.db,
      sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'`,
    );
    const found: ExpiringTable[] = [];
    for (const { name } of tables) {
      const columns = await rowsOf<{ name: string; pk: number }>(test.db, sql`SELECT name, pk FROM pragma_table_info(${name})`);
      // A table with "purgeAt" is cleaned up by it (docs/decisions/0022).
      const expiry = columns.find((column) => column.name === "purgeAt") ?? columns.find((column) => column.name === "expiresAt" || column.name === "windowEndsAt");
      const key = columns.find((column) => column.pk === 1);
      if (expiry && key) found.push({ table: name, key: key.name, expiry: expiry.name });
    }
    return found;
  };

  it("finds the expiring tables (control: the query above sees the schema)", async () => {
    const names = (await expiringTables()).map((entry) => entry.table);
    expect(names).toEqual(expect.arrayContaining(["AccessToken", "RefreshToken", "ReplayRecord", "RateLimit", "BrowserSession", "AuthorizationRequest"]));
  });

  it("plans every cleanup as an index search, never a full scan: the stores' own, whatever column a table expires by, and one for each expiring table of the schema", async () => {
    const fromSchema = (await expiringTables()).map(({ table, key, expiry }) => ({ table, expiry, text: deleteExpiredSql(table, key, expiry) }));
    // Control: the stores' modules were loaded, the event log's cleanup (by "time", which the schema's query does not see) among them.
    expect(EXPIRY_CLEANUPS.map((cleanup) => `${cleanup.table}.${cleanup.expiry}`)).toEqual(expect.arrayContaining(["RepoEvent.time", "RefreshToken.expiresAt", "RateLimit.windowEndsAt"]));
    const cleanups = new Map([...EXPIRY_CLEANUPS, ...fromSchema].map((cleanup) => [cleanup.text, cleanup]));
    for (const { table, expiry, text } of cleanups.values()) {
      if (engine === "sqlite") {
        const plan = sqlitePlan(test.db, text, CUTOFF.sqlite, CUTOFF.sqlite);
        expect({ table, plan }).toEqual({ table, plan: expect.arrayContaining([expect.stringMatching(new RegExp(`^SEARCH ${table} USING (COVERING )?INDEX .*\\(${expiry}<\\?\\)`))]) });
        expect({ table, scans: plan.filter((detail) => detail.startsWith(`SCAN ${table}`)) }).toEqual({ table, scans: [] });
      } else {
        const plan = await postgresPlan(test.db, text, [CUTOFF.postgresql, CUTOFF.postgresql]);
        const searched = expect.objectContaining({ index: expect.stringMatching(new RegExp(`^${table}_`)), indexCond: expect.stringContaining(`"${expiry}" <=`) });
        expect({ table, plan }).toEqual({ table, plan: expect.arrayContaining([searched]) });
        expect({ table, scans: plan.filter((node) => node.nodeType === "Seq Scan") }).toEqual({ table, scans: [] });
      }
    }
  });

  /** docs/decisions/0008: blobs expire by `unreferencedSince` plus the grace period, and have a composite key. */
  it("plans the cleanup of unreferenced blobs (any account) as an index search", async () => {
    if (engine === "sqlite") {
      const plan = sqlitePlan(test.db, BLOB_SQL.deleteExpired, CUTOFF.sqlite, CUTOFF.sqlite);
      expect(plan).toEqual(expect.arrayContaining([expect.stringMatching(/^SEARCH Blob USING (COVERING )?INDEX .*\(unreferencedSince<\?\)/)]));
      expect(plan.filter((detail) => detail.startsWith("SCAN Blob"))).toEqual([]);
      return;
    }
    const plan = await postgresPlan(test.db, BLOB_SQL.deleteExpired, [CUTOFF.postgresql, CUTOFF.postgresql]);
    expect(plan).toEqual(expect.arrayContaining([expect.objectContaining({ index: expect.stringMatching(/^Blob_/), indexCond: expect.stringContaining(`"unreferencedSince" <=`) })]));
    expect(plan.filter((node) => node.nodeType === "Seq Scan")).toEqual([]);
  });

  it("plans the removal of one account's expired blobs as an index search", async () => {
    if (engine === "sqlite") {
      const plan = sqlitePlan(test.db, BLOB_SQL.deleteExpiredOfAccount, "did:plc:x", CUTOFF.sqlite);
      expect(plan).toEqual([expect.stringMatching(/^SEARCH Blob USING (COVERING )?INDEX .*\(did=\? AND unreferencedSince<\?\)/)]);
      return;
    }
    const plan = await postgresPlan(test.db, BLOB_SQL.deleteExpiredOfAccount, ["did:plc:x", CUTOFF.postgresql]);
    // Both conditions in the one index search (did, then unreferencedSince), none left to filter row by row.
    expect(plan).toEqual(
      expect.arrayContaining([expect.objectContaining({ index: "Blob_did_unreferencedSince_size_idx", indexCond: expect.stringMatching(/did = .*"unreferencedSince" <=/) })]),
    );
    expect(plan.filter((node) => node.nodeType === "Seq Scan")).toEqual([]);
  });

  /** docs/decisions/0022: pushed requests are cleaned up by "purgeAt" in two statements, and counted per address. */
  it("plans the pushed requests' cleanup statements and the per-address count as index searches", async () => {
    const statements = [
      { name: "shrinkExpiredShown", text: REQUEST_SQL.shrinkExpiredShown, values: { sqlite: [0, 0, 0], postgresql: [CUTOFF.postgresql, CUTOFF.postgresql, CUTOFF.postgresql] }, cond: "purgeAt" },
      { name: "deletePastTheirTime", text: REQUEST_SQL.deletePastTheirTime, values: { sqlite: [0, 0], postgresql: [CUTOFF.postgresql, CUTOFF.postgresql] }, cond: "purgeAt" },
      { name: "pendingFrom", text: REQUEST_SQL.pendingFrom, values: { sqlite: ["192.0.2.1", 0, 500], postgresql: ["192.0.2.1", CUTOFF.postgresql, 500] }, cond: "pushedFrom" },
    ];
    for (const { name, text, values, cond } of statements) {
      if (engine === "sqlite") {
        const plan = sqlitePlan(test.db, text, ...values.sqlite);
        expect({ name, plan }).toEqual({ name, plan: expect.arrayContaining([expect.stringMatching(new RegExp(`^SEARCH AuthorizationRequest USING (COVERING )?INDEX .*\\(${cond}[<=]`))]) });
        expect({ name, scans: plan.filter((detail) => detail.startsWith("SCAN AuthorizationRequest")) }).toEqual({ name, scans: [] });
      } else {
        const plan = await postgresPlan(test.db, text, values.postgresql);
        const searched = expect.objectContaining({ index: expect.stringMatching(/^AuthorizationRequest_/), indexCond: expect.stringContaining(`"${cond}"`) });
        expect({ name, plan }).toEqual({ name, plan: expect.arrayContaining([searched]) });
        expect({ name, scans: plan.filter((node) => node.nodeType === "Seq Scan") }).toEqual({ name, scans: [] });
      }
    }
  });
});

/**
 * docs/decisions/0040 (found in review): the outer expiry test that PostgreSQL re-checks after a wait must not become
 * the way in. With statistics taken while a table's rows were live and most of them past their time since, a plain
 * `"windowEndsAt" <= ?` outside let the planner drive the delete from the expiry index and compare every expired row
 * with the batch (3.4 s on 200,000 rows); the batch's rows must be reached through their keys.
 */
describe("the cleanup on postgresql, with statistics taken while the rows were live", () => {
  let test: TestDatabase;
  beforeAll(async () => {
    test = await openTestDatabase("postgresql");
  });
  afterAll(() => test.close());

  it("reaches the rows it deletes through the batch's keys, not through the expiry index", async () => {
    const T = 1_800_000_000_000;
    const HOUR = 3_600_000;
    await execute(test.db, sql`INSERT INTO "RateLimit" ("key", "count", "windowEndsAt")
      SELECT 'k' || g, 1, CAST(${at(T + HOUR)} AS TIMESTAMP(3)) FROM generate_series(1, 20000) AS g`);
    await execute(test.db, sql`ANALYZE "RateLimit"`);
    // Nine rows in ten pass their time; the statistics still say none has.
    await execute(test.db, sql`UPDATE "RateLimit" SET "windowEndsAt" = ${at(T - HOUR)} WHERE "key" NOT LIKE '%0'`);
    const cutoff = new Date(T).toISOString();
    const plan = await postgresPlan(test.db, deleteExpiredSql("RateLimit", "key", "windowEndsAt", 50), [cutoff, cutoff]);
    const outer = plan.filter((node) => node.relation === "RateLimit" && node.index !== undefined && node.index !== "RateLimit_windowEndsAt_idx");
    expect({ outer, plan }).toEqual({ outer: [expect.objectContaining({ index: "RateLimit_pkey" })], plan });
  });
});

describe("CleanupGate: the cleanup on some writes of a process, with a bound (docs/decisions/0037, amendment)", () => {
  it("is due on the first write and then on every n-th", () => {
    const gate = new CleanupGate(3);
    expect(Array.from({ length: 7 }, () => gate.due())).toEqual([true, false, false, true, false, false, true]);
    const always = new CleanupGate(1);
    expect(Array.from({ length: 3 }, () => always.due())).toEqual([true, true, true]);
  });

  it("a due write that did not commit makes the next write due, and the count starts again from that one", () => {
    const gate = new CleanupGate(3);
    expect([gate.due(), gate.due(), gate.due(), gate.due()]).toEqual([true, false, false, true]);
    gate.missed();
    expect(Array.from({ length: 4 }, () => gate.due())).toEqual([true, false, false, true]);
  });

  it("refuses a period below one write", () => {
    expect(() => new CleanupGate(0)).toThrow();
    expect(() => new CleanupGate(1.5)).toThrow();
  });
});
