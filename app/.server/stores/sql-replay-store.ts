import { at, run, sql, type Database, type Program } from "../db/sql.ts";
import type { ReplayStore } from "../oauth/replay/replay-store.ts";
import { sha256Base64url } from "../util/crypto.ts";
import { CLEANUP_BATCH, expiredRowsCleanup } from "./expired-rows.ts";

const cleanupRecords = expiredRowsCleanup("ReplayRecord", "key");

export class SqlReplayStore implements ReplayStore {
  constructor(
    private readonly db: Database,
    private readonly now: () => number = Date.now,
  ) {}

  async recordUnique(namespace: string, key: string, expiresAt: number) {
    // Hashing bounds the key length whatever the client sent.
    const hashedKey = sha256Base64url(`${namespace}\u0000${key}`);
    const now = this.now();
    // A unique-constraint insert decides atomically (docs/architecture.md, "Tokens and codes"). An expired row with
    // the same key is taken over, never treated as a replay. A batch of expired rows goes in the same step: on
    // PostgreSQL in the same statement (one round trip, docs/decisions/0035; the key being recorded is left to the
    // insert's own conflict clause, since one statement may not change a row twice), on SQLite in one transaction.
    const recorded = await this.db.atomicStep({
      *postgresql(): Program<number> {
        return yield* run(sql`WITH "expired" AS (DELETE FROM "ReplayRecord" WHERE "key" IN (SELECT "key" FROM "ReplayRecord"
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
  }
}

function insertRecord(hashedKey: string, expiresAt: number, now: number) {
  return sql`INSERT INTO "ReplayRecord" ("key", "expiresAt") VALUES (${hashedKey}, ${at(expiresAt)})
    ON CONFLICT ("key") DO UPDATE SET "expiresAt" = excluded."expiresAt" WHERE "ReplayRecord"."expiresAt" <= ${at(now)}`;
}
