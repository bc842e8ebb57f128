import type { AccountProfile } from "../accounts/account-store.ts";
import type { CredentialProof, SessionStore, StoredSession } from "../accounts/session-store.ts";
import { shape } from "../db/row-shape.ts";
import { tables } from "../db/rows.generated.ts";
import { all, at, get, run, sql, type Database, type Program } from "../db/sql.ts";
import { expiredRowsCleanup } from "./expired-rows.ts";
import { lockCredentials } from "./locks.ts";

const cleanupSessions = expiredRowsCleanup("BrowserSession", "idHash");

const JOINED_ROW = shape({
  ...tables.BrowserSession.columns,
  accountHandle: "string",
  accountEmail: "string",
  accountEmailConfirmedAt: "time?",
  accountCreatedAt: "time",
});
const HOLDS = shape({ holds: "integer" });

/** What the sign-in proved still holds, and the account is not taken down (docs/decisions/0051). */
function* proofHolds(did: string, proof: CredentialProof): Program<boolean> {
  const found =
    "passwordHash" in proof
      ? yield* get(HOLDS, sql`SELECT 1 AS "holds" FROM "Account" WHERE "did" = ${did} AND "passwordHash" = ${proof.passwordHash} AND "takendownAt" IS NULL`)
      : yield* get(HOLDS, sql`SELECT 1 AS "holds" FROM "Passkey" p JOIN "Account" a ON a."did" = p."accountDid"
          WHERE p."credentialId" = ${proof.passkey} AND p."accountDid" = ${did} AND a."takendownAt" IS NULL`);
  return found !== undefined;
}

/** Browser sessions (docs/architecture.md, "Browser security"). */
export class SqlSessionStore implements SessionStore {
  constructor(private readonly db: Database) {}

  async create(session: StoredSession, proof: CredentialProof) {
    return this.db.transaction(function* (): Program<boolean> {
      // After any change of the account's credentials (or a takedown) that took the lock first; one taking it later
      // sees this session.
      yield* lockCredentials(session.accountDid);
      if (!(yield* proofHolds(session.accountDid, proof))) return false;
      // The operator sees when each account last signed in (/admin).
      yield* run(sql`UPDATE "Account" SET "lastSignInAt" = ${at(session.createdAt)} WHERE "did" = ${session.accountDid}`);
      // Browsers that never come back: a few of their sessions go at each sign-in.
      yield* run(cleanupSessions(session.createdAt));
      yield* run(sql`INSERT INTO "BrowserSession" ("idHash", "accountDid", "userAgent", "ipAddress", "createdAt", "lastSeenAt", "expiresAt", "authenticatedAt", "staySignedIn", "deviceHash")
        VALUES (${session.idHash}, ${session.accountDid}, ${session.userAgent}, ${session.ipAddress}, ${at(session.createdAt)},
          ${at(session.lastSeenAt)}, ${at(session.expiresAt)}, ${at(session.authenticatedAt)}, ${session.staySignedIn}, ${session.deviceHash})`);
      return true;
    });
  }

  async find(idHash: string, now: number) {
    return this.db.execute(function* (): Program<{ session: StoredSession; account: AccountProfile } | undefined> {
      // Every signed-in request reads this: who the account is, never its password hash or private signing key.
      const row = yield* get(JOINED_ROW, sql`SELECT s.*, a."handle" AS "accountHandle", a."email" AS "accountEmail",
          a."emailConfirmedAt" AS "accountEmailConfirmedAt", a."createdAt" AS "accountCreatedAt"
        FROM "BrowserSession" s JOIN "Account" a ON a."did" = s."accountDid" WHERE s."idHash" = ${idHash}`);
      if (!row) return undefined;
      if (row.expiresAt <= now) {
        yield* run(sql`DELETE FROM "BrowserSession" WHERE "idHash" = ${idHash}`);
        return undefined;
      }
      const { accountHandle, accountEmail, accountEmailConfirmedAt, accountCreatedAt, ...session } = row;
      const account: AccountProfile = {
        did: session.accountDid,
        handle: accountHandle,
        email: accountEmail,
        emailConfirmedAt: accountEmailConfirmedAt,
        createdAt: accountCreatedAt,
      };
      return { session, account };
    });
  }

  async touch(idHash: string, now: number) {
    return this.db.execute(function* (): Program<void> {
      yield* run(sql`UPDATE "BrowserSession" SET "lastSeenAt" = ${at(now)} WHERE "idHash" = ${idHash}`);
    });
  }

  async markAuthenticated(idHash: string, now: number) {
    return this.db.execute(function* (): Program<void> {
      yield* run(sql`UPDATE "BrowserSession" SET "authenticatedAt" = ${at(now)} WHERE "idHash" = ${idHash}`);
    });
  }

  async listLive(accountDid: string, now: number) {
    return this.db.execute(function* (): Program<StoredSession[]> {
      return yield* all(tables.BrowserSession, sql`SELECT * FROM "BrowserSession" WHERE "accountDid" = ${accountDid} AND "expiresAt" > ${at(now)}
        ORDER BY "lastSeenAt" DESC`);
    });
  }

  async delete(idHash: string, accountDid?: string) {
    return this.db.execute(function* (): Program<void> {
      if (accountDid === undefined) yield* run(sql`DELETE FROM "BrowserSession" WHERE "idHash" = ${idHash}`);
      else yield* run(sql`DELETE FROM "BrowserSession" WHERE "idHash" = ${idHash} AND "accountDid" = ${accountDid}`);
    });
  }

  async deleteOthers(accountDid: string, keepIdHash: string) {
    return this.db.execute(function* (): Program<number> {
      return yield* run(sql`DELETE FROM "BrowserSession" WHERE "accountDid" = ${accountDid} AND "idHash" <> ${keepIdHash}`);
    });
  }

  async deleteBrowser(accountDid: string, deviceHash: string) {
    return this.db.execute(function* (): Program<number> {
      return yield* run(sql`DELETE FROM "BrowserSession" WHERE "accountDid" = ${accountDid} AND "deviceHash" = ${deviceHash}`);
    });
  }
}
