import type { SigningKeyStore, StoredSigningKey } from "../accounts/signing-key-store.ts";
import { tables } from "../db/rows.generated.ts";
import { shape } from "../db/row-shape.ts";
import { all, run, sql, type Database, type Program } from "../db/sql.ts";

const KEY_COUNT = shape({ keyId: "string?", accounts: "integer" });

/** The Account rows' signing keys, found by the key that sealed them (the `signingKeyEncryptedWith` index). */
export class SqlSigningKeyStore implements SigningKeyStore {
  constructor(private readonly db: Database) {}

  async keyIds() {
    return this.db.execute(function* (): Program<Array<{ keyId: string | null; accounts: number }>> {
      return yield* all(KEY_COUNT, sql`SELECT "signingKeyEncryptedWith" AS "keyId", COUNT(*) AS "accounts" FROM "Account" GROUP BY "signingKeyEncryptedWith"`);
    });
  }

  async sealedWith(keyId: string | null, limit: number) {
    return this.db.execute(function* (): Program<StoredSigningKey[]> {
      if (keyId === null) {
        return yield* all(tables.Account.pick("did", "signingKey"), sql`SELECT "did", "signingKey" FROM "Account" WHERE "signingKeyEncryptedWith" IS NULL ORDER BY "did" LIMIT ${limit}`);
      }
      return yield* all(tables.Account.pick("did", "signingKey"), sql`SELECT "did", "signingKey" FROM "Account" WHERE "signingKeyEncryptedWith" = ${keyId} ORDER BY "did" LIMIT ${limit}`);
    });
  }

  async reseal(did: string, previous: string, sealed: string, keyId: string) {
    return this.db.execute(function* (): Program<boolean> {
      // The compare-and-swap on the value read: of several processes sealing one key at once, one writes.
      const changed = yield* run(sql`UPDATE "Account" SET "signingKey" = ${sealed}, "signingKeyEncryptedWith" = ${keyId}
        WHERE "did" = ${did} AND "signingKey" = ${previous}`);
      return changed > 0;
    });
  }
}
