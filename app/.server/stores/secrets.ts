import { randomBytes } from "node:crypto";
import type Database from "better-sqlite3";

export type SecretName = "dpop_nonce" | "cookie";

/**
 * Returns the named secret, generating and storing it on first use. INSERT OR
 * IGNORE then SELECT: when several processes start at once, all read the one
 * value that won.
 */
export function loadOrCreateSecret(db: Database.Database, name: SecretName): string {
  db.prepare(`INSERT OR IGNORE INTO "ServerSecret" (name, value, createdAt) VALUES (?, ?, ?)`).run(
    name,
    randomBytes(32).toString("base64url"),
    Date.now(),
  );
  const row = db.prepare(`SELECT value FROM "ServerSecret" WHERE name = ?`).get(name) as { value: string };
  return row.value;
}
