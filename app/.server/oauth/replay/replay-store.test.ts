import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SqliteReplayStore } from "./replay-store.ts";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const migrationsDir = path.join(repoRoot, "prisma", "migrations");

function migrationSql(): string[] {
  return readdirSync(migrationsDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort()
    .map((name) => readFileSync(path.join(migrationsDir, name, "migration.sql"), "utf8"));
}

let dir: string;
let db: Database.Database;
let clock: number;
const now = () => clock;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "atrium-replay-"));
  db = new Database(path.join(dir, "test.db"));
  for (const sql of migrationSql()) db.exec(sql);
  clock = 1_700_000_000_000;
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

function count(where = "1 = 1", ...params: unknown[]): number {
  return (db.prepare(`SELECT COUNT(*) AS n FROM "ReplayRecord" WHERE ${where}`).get(...params) as { n: number }).n;
}

describe("SqliteReplayStore", () => {
  it("uses the table created by the Prisma migration", () => {
    const columns = db.prepare(`PRAGMA table_info("ReplayRecord")`).all() as { name: string; pk: number }[];
    expect(columns.map((c) => c.name).sort()).toEqual(["expiresAt", "key"]);
    expect(columns.find((c) => c.name === "key")?.pk).toBe(1);
  });

  it("records a key once: true, then false while it is live", () => {
    const store = new SqliteReplayStore(db, now);
    expect(store.recordUnique("dpop:jkt1", "jti-1", clock + 60_000)).toBe(true);
    expect(store.recordUnique("dpop:jkt1", "jti-1", clock + 60_000)).toBe(false);
    clock += 59_000;
    expect(store.recordUnique("dpop:jkt1", "jti-1", clock + 60_000)).toBe(false);
    expect(count()).toBe(1);
  });

  it("keeps namespaces apart", () => {
    const store = new SqliteReplayStore(db, now);
    expect(store.recordUnique("dpop:a", "same", clock + 60_000)).toBe(true);
    expect(store.recordUnique("dpop:b", "same", clock + 60_000)).toBe(true);
    expect(store.recordUnique("client-assertion:a", "same", clock + 60_000)).toBe(true);
    // No ambiguity from concatenation.
    expect(store.recordUnique("dpop:ab", "c", clock + 60_000)).toBe(true);
    expect(store.recordUnique("dpop:a", "bc", clock + 60_000)).toBe(true);
    expect(count()).toBe(5);
  });

  it("stores hashed keys of bounded length, not the raw value", () => {
    const store = new SqliteReplayStore(db, now);
    const longKey = "k".repeat(10_000);
    expect(store.recordUnique("dpop:x", longKey, clock + 60_000)).toBe(true);
    const row = db.prepare(`SELECT key FROM "ReplayRecord"`).get() as { key: string };
    expect(row.key.length).toBeLessThanOrEqual(64);
    expect(row.key).not.toContain("kkkk");
    expect(store.recordUnique("dpop:x", longKey, clock + 60_000)).toBe(false);
  });

  it("lets an expired key be recorded again", () => {
    const store = new SqliteReplayStore(db, now);
    expect(store.recordUnique("dpop:jkt1", "jti-1", clock + 60_000)).toBe(true);
    clock += 60_000; // expiresAt <= now: expired
    expect(store.recordUnique("dpop:jkt1", "jti-1", clock + 60_000)).toBe(true);
    // And it is live again under its new expiry.
    expect(store.recordUnique("dpop:jkt1", "jti-1", clock + 60_000)).toBe(false);
    expect(count()).toBe(1);
  });

  it("takes over an expired row even when cleanup did not remove it first", () => {
    const store = new SqliteReplayStore(db, now);
    expect(store.recordUnique("ns", "target", clock + 1_000)).toBe(true);
    // 50 rows that expired earlier than "target": a batch of 20 need not reach "target",
    // so the insert has to take the expired row over (ON CONFLICT ... WHERE expiresAt <= now).
    const insert = db.prepare(`INSERT INTO "ReplayRecord" (key, expiresAt) VALUES (?, ?)`);
    for (let i = 0; i < 50; i++) insert.run(`expired-${i}`, clock - 1);
    clock += 1_000;
    expect(store.recordUnique("ns", "target", clock + 1_000)).toBe(true);
    expect(store.recordUnique("ns", "target", clock + 1_000)).toBe(false);
  });

  it("removes expired rows in batches of 20 on each insert, keeping the table bounded", () => {
    const store = new SqliteReplayStore(db, now);
    const insert = db.prepare(`INSERT INTO "ReplayRecord" (key, expiresAt) VALUES (?, ?)`);
    db.transaction(() => {
      for (let i = 0; i < 100; i++) insert.run(`old-${i}`, clock - 1_000 - i);
    })();
    expect(count()).toBe(100);

    const expired = () => count("expiresAt <= ?", clock);
    for (let call = 1; call <= 3; call++) {
      expect(store.recordUnique("dpop:k", `fresh-${call}`, clock + 60_000)).toBe(true);
      expect(expired()).toBe(100 - 20 * call);
      expect(count()).toBe(100 - 20 * call + call);
    }
    // Two more calls clear the rest; further calls find nothing to delete.
    store.recordUnique("dpop:k", "fresh-4", clock + 60_000);
    store.recordUnique("dpop:k", "fresh-5", clock + 60_000);
    expect(expired()).toBe(0);
    store.recordUnique("dpop:k", "fresh-6", clock + 60_000);
    expect(count()).toBe(6);
  });

  it("does not delete live rows during cleanup", () => {
    const store = new SqliteReplayStore(db, now);
    for (let i = 0; i < 30; i++) expect(store.recordUnique("ns", `live-${i}`, clock + 60_000)).toBe(true);
    expect(count()).toBe(30);
    for (let i = 0; i < 30; i++) expect(store.recordUnique("ns", `live-${i}`, clock + 60_000)).toBe(false);
  });

  it("stays bounded under steady traffic", () => {
    const store = new SqliteReplayStore(db, now);
    // One insert per second, each live for 10 s: the table never grows far beyond 10 live rows.
    let max = 0;
    for (let i = 0; i < 500; i++) {
      clock += 1_000;
      expect(store.recordUnique("ns", `jti-${i}`, clock + 10_000)).toBe(true);
      max = Math.max(max, count());
    }
    expect(max).toBeLessThanOrEqual(11);
  });

  it("is atomic across two stores sharing the database", () => {
    const a = new SqliteReplayStore(db, now);
    const second = new Database(path.join(dir, "test.db"));
    try {
      const b = new SqliteReplayStore(second, now);
      expect(a.recordUnique("ns", "k", clock + 60_000)).toBe(true);
      expect(b.recordUnique("ns", "k", clock + 60_000)).toBe(false);
    } finally {
      second.close();
    }
  });
});
