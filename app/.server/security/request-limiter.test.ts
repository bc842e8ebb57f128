import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqlite } from "../db/index.ts";
import { migrateDatabase } from "../db/migrate.ts";
import { RequestLimiter } from "./request-limiter.ts";

/**
 * docs/architecture.md, "Abuse limits": per-address request limits hold across every process on the
 * database. Two limiters on two connections to one file stand for two
 * processes; the clock is fixed so windows are exact.
 */
describe("RequestLimiter", () => {
  let dir: string;
  let file: string;
  let connections: Database.Database[];
  let limiters: RequestLimiter[];
  let now: number;

  const open = () => {
    const db = openSqlite(file);
    connections.push(db);
    // No timer flushes during a test: flush() is called where a second would have passed.
    const limiter = new RequestLimiter(db, { flushMs: 3_600_000, now: () => now });
    limiters.push(limiter);
    return limiter;
  };
  const storedCount = (key: string) =>
    (connections[0]!.prepare(`SELECT count FROM "RateLimit" WHERE key = ?`).get(key) as { count: number } | undefined)?.count ?? 0;

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "atrium-limiter-"));
    file = path.join(dir, "atrium.db");
    migrateDatabase(file);
    connections = [];
    limiters = [];
    now = 1_800_000_000_000;
  });
  afterEach(() => {
    for (const limiter of limiters) limiter.close();
    for (const db of connections) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("allows exactly `limit` requests in a window, then refuses with the time left", () => {
    const limiter = open();
    const results = Array.from({ length: 12 }, () => limiter.hit("requests:xrpc:192.0.2.1", 10, 60_000));
    expect(results.map((result) => result.allowed)).toEqual([...Array(10).fill(true), false, false]);
    expect(results[10]!.retryAfterSeconds).toBe(60);
    now += 45_000;
    expect(limiter.hit("requests:xrpc:192.0.2.1", 10, 60_000)).toMatchObject({ allowed: false, retryAfterSeconds: 15 });
    now += 15_000;
    expect(limiter.hit("requests:xrpc:192.0.2.1", 10, 60_000).allowed).toBe(true);
  });

  it("counts far-from-the-limit hits in memory and writes them at the next flush", () => {
    const limiter = open();
    for (let i = 0; i < 4; i++) limiter.hit("requests:par:192.0.2.2", 100, 60_000);
    // The first hit of a window is written (it learns the shared window); the next three wait for the flush.
    expect(storedCount("requests:par:192.0.2.2")).toBe(1);
    limiter.flush();
    expect(storedCount("requests:par:192.0.2.2")).toBe(4);
  });

  it("addresses are counted separately", () => {
    const limiter = open();
    for (let i = 0; i < 3; i++) limiter.hit("requests:token:192.0.2.3", 3, 60_000);
    expect(limiter.hit("requests:token:192.0.2.3", 3, 60_000).allowed).toBe(false);
    expect(limiter.hit("requests:token:192.0.2.4", 3, 60_000).allowed).toBe(true);
  });

  it("two processes share one count: together they get the limit, not twice it", () => {
    const [first, second] = [open(), open()];
    const key = "requests:xrpc:198.51.100.7";
    let allowed = 0;
    for (let i = 0; i < 80; i++) {
      if ((i % 2 === 0 ? first : second).hit(key, 20, 60_000).allowed) allowed++;
      // A second passes every few requests: both flush, as their timers would.
      if (i % 6 === 5) for (const limiter of [first, second]) limiter.flush();
    }
    // Near the limit every hit is decided by the database; what one process still held in memory
    // when that began (at most half the limit) is the most the pair can go over.
    expect(allowed).toBeGreaterThanOrEqual(20);
    expect(allowed).toBeLessThanOrEqual(30);
    // Once the shared count is over, both refuse for the rest of the window.
    expect(first.hit(key, 20, 60_000).allowed).toBe(false);
    expect(second.hit(key, 20, 60_000).allowed).toBe(false);
  });

  it("small limits are exact across processes (every hit is written)", () => {
    const [first, second] = [open(), open()];
    const key = "requests:par:198.51.100.8";
    const outcomes = Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? first : second).hit(key, 4, 60_000).allowed);
    expect(outcomes).toEqual([true, true, true, true, false, false]);
  });

  it("close() writes what is still counted in memory", () => {
    const limiter = open();
    for (let i = 0; i < 5; i++) limiter.hit("requests:xrpc:203.0.113.9", 1000, 60_000);
    limiter.close();
    expect(storedCount("requests:xrpc:203.0.113.9")).toBe(5);
  });
});
