import type Database from "better-sqlite3";
import type { ChallengePurpose, ChallengeStore, NewChallenge } from "../accounts/challenge-store.ts";
import { deleteExpiredSql } from "./expired-rows.ts";

export class SqliteChallengeStore implements ChallengeStore {
  private readonly s;

  constructor(db: Database.Database) {
    this.s = {
      insert: db.prepare(
        `INSERT INTO "WebAuthnChallenge" (challenge, purpose, requestIdHash, accountDid, createdAt, expiresAt) VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      cleanup: db.prepare(
        deleteExpiredSql("WebAuthnChallenge", "challenge"),
      ),
      // One DELETE decides: the row goes only if purpose and binding match and it is live.
      consume: db.prepare(
        `DELETE FROM "WebAuthnChallenge" WHERE challenge = ? AND purpose = ? AND requestIdHash IS ? AND accountDid IS ? AND expiresAt > ?`,
      ),
    };
  }

  create(challenge: NewChallenge): void {
    const now = Date.now();
    this.s.cleanup.run(now);
    this.s.insert.run(challenge.challenge, challenge.purpose, challenge.requestIdHash ?? null, challenge.accountDid ?? null, now, now + challenge.lifetimeMs);
  }

  consume(challenge: string, binding: { purpose: ChallengePurpose; requestIdHash?: string; accountDid?: string }): boolean {
    return this.s.consume.run(challenge, binding.purpose, binding.requestIdHash ?? null, binding.accountDid ?? null, Date.now()).changes === 1;
  }
}
