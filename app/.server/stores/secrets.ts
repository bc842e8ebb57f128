import { randomBytes } from "node:crypto";
import { tables } from "../db/rows.generated.ts";
import { at, get, run, sql, type Database, type Program } from "../db/sql.ts";
import type { SecretName, SecretStore } from "../security/secret-store.ts";

/** The server's generated secrets, one `ServerSecret` row each. */
export class SqlSecretStore implements SecretStore {
  constructor(private readonly db: Database) {}

  /** Insert unless present, then read: when several processes start at once, all read the one value that won. */
  async loadOrCreate(name: SecretName, now: number): Promise<string> {
    const candidate = randomBytes(32).toString("base64url");
    return this.db.transaction(function* (): Program<string> {
      yield* run(sql`INSERT INTO "ServerSecret" ("name", "value", "createdAt") VALUES (${name}, ${candidate}, ${at(now)}) ON CONFLICT DO NOTHING`);
      const row = yield* get(tables.ServerSecret.pick("value"), sql`SELECT "value" FROM "ServerSecret" WHERE "name" = ${name}`);
      if (!row) throw new Error(`The ${name} secret could not be stored`);
      return row.value;
    });
  }

  async find(name: SecretName): Promise<string | undefined> {
    return this.db.execute(function* (): Program<string | undefined> {
      return (yield* get(tables.ServerSecret.pick("value"), sql`SELECT "value" FROM "ServerSecret" WHERE "name" = ${name}`))?.value;
    });
  }

  async remove(name: SecretName, value: string): Promise<boolean> {
    return this.db.execute(function* (): Program<boolean> {
      return (yield* run(sql`DELETE FROM "ServerSecret" WHERE "name" = ${name} AND "value" = ${value}`)) > 0;
    });
  }
}
