import { at, run, sql, type Database, type Program } from "../db/sql.ts";
import type { ReplayStore } from "../oauth/replay/replay-store.ts";
import { sha256Base64url } from "../util/crypto.ts";
import { expiredRowsCleanup } from "./expired-rows.ts";

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
    // Cleanup and insert share one transaction: one commit per recorded proof.
    return this.db.transaction(function* (): Program<boolean> {
      yield* run(cleanupRecords(now));
      // A unique-constraint insert decides atomically (docs/architecture.md, "Tokens and codes"). An expired row
      // with the same key is taken over, never treated as a replay.
      const recorded = yield* run(sql`INSERT INTO "ReplayRecord" ("key", "expiresAt") VALUES (${hashedKey}, ${at(expiresAt)})
        ON CONFLICT ("key") DO UPDATE SET "expiresAt" = excluded."expiresAt" WHERE "ReplayRecord"."expiresAt" <= ${at(now)}`);
      return recorded === 1;
    });
  }
}
