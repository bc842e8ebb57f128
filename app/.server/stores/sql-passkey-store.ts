import type { PasskeyStore, StoredPasskey } from "../accounts/passkey-store.ts";
import { shape } from "../db/row-shape.ts";
import { tables } from "../db/rows.generated.ts";
import { all, at, get, run, sql, type Database, type Program } from "../db/sql.ts";

/** The row of an existence check. */
const ONE = shape({ one: "integer" });

export class SqlPasskeyStore implements PasskeyStore {
  constructor(private readonly db: Database) {}

  async insert(passkey: StoredPasskey) {
    return this.db.execute(function* (): Program<boolean> {
      const inserted = yield* run(sql`INSERT INTO "Passkey"
          ("credentialId", "accountDid", "name", "publicKey", "counter", "transports", "deviceType", "backedUp", "createdAt", "lastUsedAt")
        VALUES (${passkey.credentialId}, ${passkey.accountDid}, ${passkey.name}, ${passkey.publicKey}, ${passkey.counter}, ${passkey.transports},
          ${passkey.deviceType}, ${passkey.backedUp}, ${at(passkey.createdAt)}, ${at(passkey.lastUsedAt)})
        ON CONFLICT ("credentialId") DO NOTHING`);
      return inserted === 1;
    });
  }

  async find(credentialId: string) {
    return this.db.execute(function* (): Program<StoredPasskey | undefined> {
      return yield* get(tables.Passkey, sql`SELECT * FROM "Passkey" WHERE "credentialId" = ${credentialId}`);
    });
  }

  async list(accountDid: string) {
    return this.db.execute(function* (): Program<StoredPasskey[]> {
      return yield* all(tables.Passkey, sql`SELECT * FROM "Passkey" WHERE "accountDid" = ${accountDid} ORDER BY "createdAt" ASC, "credentialId" ASC`);
    });
  }

  async recordUse(credentialId: string, counter: number, backedUp: boolean, now: number) {
    // WebAuthn Level 2 §7.2, the signature counter: "If authData.signCount is nonzero or storedSignCount is nonzero",
    // a count "less than or equal to storedSignCount" is "a signal that the authenticator may be cloned", and the
    // sign-in is refused: here only (the manager gives the library a stored count of 0). The update tests the count
    // against the row, so that of two sign-ins with one count at once only one is recorded: on PostgreSQL the
    // second waits for the first's row and re-tests its WHERE on the new version; on SQLite writes are serial. "Both
    // zero" is written against the column ("counter" = the new count), so that PostgreSQL types the parameter as the
    // column's BIGINT: beside a literal 0 it would be an INTEGER, and a count of 2^31 or more an error.
    return this.db.execute(function* (): Program<boolean> {
      const updated = yield* run(sql`UPDATE "Passkey" SET "counter" = ${counter}, "backedUp" = ${backedUp}, "lastUsedAt" = ${at(now)}
        WHERE "credentialId" = ${credentialId} AND ("counter" < ${counter} OR ("counter" = 0 AND "counter" = ${counter}))`);
      return updated === 1;
    });
  }

  async rename(accountDid: string, credentialId: string, name: string) {
    return this.db.execute(function* (): Program<boolean> {
      return (yield* run(sql`UPDATE "Passkey" SET "name" = ${name} WHERE "accountDid" = ${accountDid} AND "credentialId" = ${credentialId}`)) === 1;
    });
  }

  async remove(accountDid: string, credentialId: string) {
    return this.db.execute(function* (): Program<boolean> {
      return (yield* run(sql`DELETE FROM "Passkey" WHERE "accountDid" = ${accountDid} AND "credentialId" = ${credentialId}`)) === 1;
    });
  }

  async exists(accountDid?: string) {
    return this.db.execute(function* (): Program<boolean> {
      const row =
        accountDid === undefined
          ? yield* get(ONE, sql`SELECT 1 AS "one" FROM "Passkey" LIMIT 1`)
          : yield* get(ONE, sql`SELECT 1 AS "one" FROM "Passkey" WHERE "accountDid" = ${accountDid} LIMIT 1`);
      return row !== undefined;
    });
  }
}
