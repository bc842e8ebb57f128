import { randomBytes } from "node:crypto";
import { tables } from "../db/rows.generated.ts";
import { at, get, run, sql, type Database, type Program } from "../db/sql.ts";

/** `plc_rotation_key`: the PLC rotation key's 32 bytes when ATRIUM_PLC_ROTATION_KEY is not set (identity/rotation-key.ts). */
export type SecretName = "dpop_nonce" | "cookie" | "plc_rotation_key";

/**
 * Returns the named secret, generating and storing it on first use. Insert
 * unless present, then read: when several processes start at once, all read
 * the one value that won.
 */
export async function loadOrCreateSecret(db: Database, name: SecretName, now = Date.now()): Promise<string> {
  const candidate = randomBytes(32).toString("base64url");
  return db.transaction(function* (): Program<string> {
    yield* run(sql`INSERT INTO "ServerSecret" ("name", "value", "createdAt") VALUES (${name}, ${candidate}, ${at(now)}) ON CONFLICT DO NOTHING`);
    const row = yield* get(tables.ServerSecret.pick("value"), sql`SELECT "value" FROM "ServerSecret" WHERE "name" = ${name}`);
    if (!row) throw new Error(`The ${name} secret could not be stored`);
    return row.value;
  });
}
