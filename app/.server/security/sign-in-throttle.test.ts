import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqlite } from "../db/index.ts";
import { migrateDatabase } from "../db/migrate.ts";
import { TooManyRequestsError } from "../oauth/errors/oauth-error.ts";
import { SqliteAttemptStore } from "../stores/sqlite-attempt-store.ts";
import { MINUTE, SECOND } from "../util/time.ts";
import { SignInThrottle, type ClaimedAttempt } from "./sign-in-throttle.ts";

/**
 * The throttle's rule on a real SQLite file: attempts counted before they are
 * checked, free attempts, doubling waits, forgiveness, memory. Two throttles on
 * two connections to one file stand for two server processes.
 */
describe("SignInThrottle", () => {
  let dir: string;
  let file: string;
  let connections: Database.Database[];
  let now: number;

  const throttle = () => {
    const db = openSqlite(file);
    connections.push(db);
    return new SignInThrottle(new SqliteAttemptStore(db), { freeAttempts: 3, baseDelayMs: SECOND, maxDelayMs: 8 * SECOND, memoryMs: 15 * MINUTE }, () => now);
  };
  const waitOf = (attempt: () => unknown): number | undefined => {
    try {
      attempt();
      return undefined;
    } catch (error) {
      if (error instanceof TooManyRequestsError) return error.retryAfterSeconds;
      throw error;
    }
  };

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "atrium-throttle-"));
    file = path.join(dir, "atrium.db");
    migrateDatabase(file);
    connections = [];
    now = 1_800_000_000_000;
  });
  afterEach(() => {
    for (const db of connections) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("lets exactly the free attempts through at once, then each further one waits twice as long as the last", () => {
    const t = throttle();
    const account = { account: "did:plc:alice" };
    for (let i = 0; i < 3; i++) expect(waitOf(() => t.claim(account, "10.0.0.1"))).toBeUndefined();
    expect(waitOf(() => t.claim(account, "10.0.0.2"))).toBe(1);
    now += SECOND;
    expect(waitOf(() => t.claim(account, "10.0.0.2"))).toBeUndefined();
    expect(waitOf(() => t.claim(account, "10.0.0.2"))).toBe(2);
    now += 2 * SECOND;
    expect(waitOf(() => t.claim(account, "10.0.0.2"))).toBeUndefined();
    expect(waitOf(() => t.claim(account, "10.0.0.2"))).toBe(4);
    // Capped at maxDelayMs.
    for (const step of [4, 8, 8]) {
      now += step * SECOND;
      expect(waitOf(() => t.claim(account, "10.0.0.2"))).toBeUndefined();
    }
    expect(waitOf(() => t.claim(account, "10.0.0.2"))).toBe(8);
  });

  it("a refused attempt counts nothing, so waiting it out is enough", () => {
    const t = throttle();
    const typed = { typed: "nobody.test" };
    for (let i = 0; i < 3; i++) t.claim(typed, undefined);
    for (let i = 0; i < 10; i++) expect(waitOf(() => t.claim(typed, undefined))).toBe(1);
    now += SECOND;
    expect(waitOf(() => t.claim(typed, undefined))).toBeUndefined();
  });

  it("counts per account and per address: one address guessing many accounts waits too (after four times the free attempts)", () => {
    const t = throttle();
    for (let i = 0; i < 12; i++) t.claim({ typed: `nobody-${i}.test` }, "10.0.0.9");
    expect(waitOf(() => t.claim({ typed: "nobody-12.test" }, "10.0.0.9"))).toBe(1);
    // Another address is not held up by this one.
    expect(waitOf(() => t.claim({ typed: "nobody-3.test" }, "10.0.0.10"))).toBeUndefined();
  });

  it("a success hands its own attempt back; earlier failures still count", () => {
    const t = throttle();
    const account = { account: "did:plc:bob" };
    t.claim(account, "10.0.0.1");
    t.claim(account, "10.0.0.1");
    const success: ClaimedAttempt = t.claim(account, "10.0.0.1");
    t.succeeded(success);
    // Two failures remain: one more free attempt, then waiting.
    t.claim(account, "10.0.0.1");
    expect(waitOf(() => t.claim(account, "10.0.0.1"))).toBe(1);
  });

  it("forgets attempts once memoryMs has passed since the latest", () => {
    const t = throttle();
    const account = { account: "did:plc:carol" };
    for (let i = 0; i < 3; i++) t.claim(account, undefined);
    now += 15 * MINUTE;
    for (let i = 0; i < 3; i++) expect(waitOf(() => t.claim(account, undefined))).toBeUndefined();
  });

  it("two processes on one database share the counters: together they get the free attempts once", () => {
    const [first, second] = [throttle(), throttle()];
    const account = { account: "did:plc:dave" };
    const outcomes = Array.from({ length: 10 }, (_, i) => waitOf(() => (i % 2 ? first : second).claim(account, undefined)));
    expect(outcomes.filter((wait) => wait === undefined)).toHaveLength(3);
  });
});

describe("SignInThrottle: what a success and a failure leave behind", () => {
  let dir: string;
  let db: Database.Database;
  let now: number;
  let t: SignInThrottle;

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "atrium-throttle-memory-"));
    const file = path.join(dir, "atrium.db");
    migrateDatabase(file);
    db = openSqlite(file);
    now = 1_800_000_000_000;
    t = new SignInThrottle(new SqliteAttemptStore(db), { freeAttempts: 3, baseDelayMs: SECOND, maxDelayMs: 8 * SECOND, memoryMs: 15 * MINUTE }, () => now);
  });
  afterEach(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("successes do not prolong the memory of earlier failures", () => {
    const account = { account: "did:plc:erin" };
    for (let i = 0; i < 3; i++) t.failed(t.claim(account, undefined));
    // Ten minutes of correct sign-ins, then the failures are forgotten 15 minutes after the last failure.
    for (let minute = 1; minute <= 10; minute++) {
      now += MINUTE;
      t.succeeded(t.claim(account, undefined));
    }
    now += 5 * MINUTE;
    for (let i = 0; i < 3; i++) expect(() => t.claim(account, undefined)).not.toThrow();
  });

  it("a known device and a signed-in session count on their own, never on the account or the address", () => {
    for (let i = 0; i < 3; i++) t.failed(t.claim({ account: "did:plc:finn" }, "10.0.0.1"));
    expect(() => t.claim({ account: "did:plc:finn" }, "10.0.0.1")).toThrow(TooManyRequestsError);
    expect(() => t.claim({ device: { account: "did:plc:finn", id: "browser-1" } }, "10.0.0.1")).not.toThrow();
    expect(() => t.claim({ session: "session-hash" }, undefined)).not.toThrow();
  });
});
