import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrateDatabase } from "../db/migrate.ts";
import { deleteExpiredSql } from "./expired-rows.ts";
import { BLOB_SQL } from "./sqlite-blob-store.ts";

/**
 * Lazy expiry (docs/architecture.md, "Lazy expiry"): every insert into a table of short-lived rows
 * deletes a few expired ones first. Without an index on the expiry column that
 * delete reads the whole table each time — a refresh cost grew with every
 * token ever issued until this was caught — so each such table in the
 * migrated schema must let the cleanup search an index.
 */
describe("expired-row cleanup uses an index on every expiring table", () => {
  let dir: string;
  let db: Database.Database;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "atrium-expiry-"));
    const file = path.join(dir, "atrium.db");
    migrateDatabase(file);
    db = new Database(file);
  });
  afterAll(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const expiringTables = () => {
    const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'`).all() as { name: string }[];
    return tables.flatMap(({ name }) => {
      const columns = db.prepare(`SELECT name, pk FROM pragma_table_info(?)`).all(name) as { name: string; pk: number }[];
      const expiry = columns.find((column) => column.name === "expiresAt" || column.name === "windowEndsAt");
      const key = columns.find((column) => column.pk === 1);
      return expiry && key ? [{ table: name, key: key.name, expiry: expiry.name }] : [];
    });
  };

  it("finds the expiring tables (control: the query above sees the schema)", () => {
    const names = expiringTables().map((entry) => entry.table);
    expect(names).toEqual(expect.arrayContaining(["AccessToken", "RefreshToken", "ReplayRecord", "RateLimit", "BrowserSession"]));
  });

  it("plans every cleanup as an index search, never a full scan", () => {
    for (const { table, key, expiry } of expiringTables()) {
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${deleteExpiredSql(table, key, expiry)}`).all(0) as { detail: string }[]).map((row) => row.detail);
      expect({ table, plan }).toEqual({ table, plan: expect.arrayContaining([expect.stringMatching(new RegExp(`^SEARCH ${table} USING (COVERING )?INDEX .*\\(${expiry}<\\?\\)`))]) });
      expect({ table, scans: plan.filter((detail) => detail.startsWith(`SCAN ${table}`)) }).toEqual({ table, scans: [] });
    }
  });

  /** docs/decisions/0008: blobs expire by `unreferencedSince` plus the grace period, and have a composite key. */
  const blobPlan = (sql: string, ...args: unknown[]) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[]).map((row) => row.detail);

  it("plans the cleanup of unreferenced blobs (any account) as an index search", () => {
    const plan = blobPlan(BLOB_SQL.deleteExpired, 0);
    expect(plan).toEqual(expect.arrayContaining([expect.stringMatching(/^SEARCH Blob USING (COVERING )?INDEX .*\(unreferencedSince<\?\)/)]));
    expect(plan.filter((detail) => detail.startsWith("SCAN Blob"))).toEqual([]);
  });

  it("plans the removal of one account's expired blobs as an index search", () => {
    const plan = blobPlan(BLOB_SQL.deleteExpiredOfAccount, "did:plc:x", 0);
    expect(plan).toEqual([expect.stringMatching(/^SEARCH Blob USING (COVERING )?INDEX .*\(did=\? AND unreferencedSince<\?\)/)]);
  });
});
