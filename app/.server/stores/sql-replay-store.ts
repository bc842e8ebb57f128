import { at, run, sql, type Database, type Program } from "../db/sql.ts";
import type { ReplayStore } from "../oauth/replay/replay-store.ts";
import { sha256Base64url } from "../util/crypto.ts";
import { CleanupGate, CLEANUP_BATCH, expiredRowsCleanup, STILL_EXPIRES_AT } from "./expired-rows.ts";

const cleanupRecords = expiredRowsCleanup("ReplayRecord", "key");

/**
 * A process's replay inserts clean up a batch of expired rows on one insert in this many (the first, then every
 * fourth; docs/decisions/0039): the others are a single statement, on SQLite outside any transaction. With batches of
 * CLEANUP_BATCH (20), five times as many rows leave as arrive while expired rows remain.
 */
export const REPLAYS_PER_CLEANUP = 4;

export class SqlReplayStore implements ReplayStore {
  private readonly cleanup = new CleanupGate(REPLAYS_PER_CLEANUP);

  constructor(
    private readonly db: Database,
    private readonly now: () => number = Date.now,
  ) {}

  async recordUnique(namespace: string, key: string, expiresAt: number) {
    // Hashing bounds the key length whatever the client sent.
    const hashedKey = sha256Base64url(`${namespace}\u0000${key}`);
    const now = this.now();
    // A unique-constraint insert decides atomically (docs/architecture.md, "Tokens and codes"). An expired row with
    // the same key is taken over, never treated as a replay. On one insert in REPLAYS_PER_CLEANUP a batch of expired
    // rows goes in the same step: on PostgreSQL in the same statement (one round trip, docs/decisions/0035; the key
    // being recorded is left to the insert's own conflict clause, since one statement may not change a row twice), on
    // SQLite in one transaction. The others are the insert alone, atomic as one statement is on both engines.
    if (!this.cleanup.due()) {
      const inserted = await this.db.execute(() => run(insertRecord(hashedKey, expiresAt, now)));
      return inserted === 1;
    }
    try {
      const recorded = await this.db.atomicStep({
        *postgresql(): Program<number> {
          return yield* run(sql`WITH "expired" AS (DELETE FROM "ReplayRecord" WHERE ${STILL_EXPIRES_AT} <= ${at(now)} AND "key" IN (SELECT "key" FROM "ReplayRecord"
              WHERE "expiresAt" <= ${at(now)} AND "key" <> ${hashedKey} LIMIT ${CLEANUP_BATCH}))
            INSERT INTO "ReplayRecord" ("key", "expiresAt") VALUES (${hashedKey}, ${at(expiresAt)})
            ON CONFLICT ("key") DO UPDATE SET "expiresAt" = excluded."expiresAt" WHERE "ReplayRecord"."expiresAt" <= ${at(now)}`);
        },
        *sqlite(): Program<number> {
          yield* run(cleanupRecords(now));
          return yield* run(insertRecord(hashedKey, expiresAt, now));
        },
      });
      return recorded === 1;
    } catch (error) {
      this.cleanup.missed();
      throw error;
    }
  }
}

function insertRecord(hashedKey: string, expiresAt: number, now: number) {
  return sql`INSERT INTO "ReplayRecord" ("key", "expiresAt") VALUES (${hashedKey}, ${at(expiresAt)})
    ON CONFLICT ("key") DO UPDATE SET "expiresAt" = excluded."expiresAt" WHERE "ReplayRecord"."expiresAt" <= ${at(now)}`;
}
