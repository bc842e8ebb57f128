import type Database from "better-sqlite3";
import { sha256Base64url } from "../../util/crypto.ts";
import { deleteExpiredSql } from "../../stores/expired-rows.ts";

export interface ReplayStore {
  /** Records `key` until `expiresAt`; false when it was already recorded and still live. */
  recordUnique(namespace: string, key: string, expiresAt: number): boolean;
}

export class SqliteReplayStore implements ReplayStore {
  private readonly insert;
  private readonly cleanup;

  constructor(db: Database.Database, private readonly now: () => number = Date.now) {
    // A unique-constraint insert decides atomically (docs/architecture.md, "Tokens and codes"). An expired
    // row with the same key is taken over, never treated as a replay.
    this.insert = db.prepare(
      `INSERT INTO "ReplayRecord" (key, expiresAt) VALUES (?, ?)
       ON CONFLICT(key) DO UPDATE SET expiresAt = excluded.expiresAt WHERE "ReplayRecord".expiresAt <= ?`,
    );
    this.cleanup = db.prepare(deleteExpiredSql("ReplayRecord", "key"));
    // Cleanup and insert share one transaction: one commit per recorded proof.
    this.record = db.transaction((hashedKey: string, expiresAt: number, now: number): boolean => {
      this.cleanup.run(now);
      return this.insert.run(hashedKey, expiresAt, now).changes === 1;
    });
  }

  private readonly record: (hashedKey: string, expiresAt: number, now: number) => boolean;

  recordUnique(namespace: string, key: string, expiresAt: number): boolean {
    // Hashing bounds the key length whatever the client sent.
    return this.record(sha256Base64url(`${namespace}\u0000${key}`), expiresAt, this.now());
  }
}
