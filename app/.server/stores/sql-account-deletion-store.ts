import type { AccountDeletionStore, AccountRemoval, DeletionCodeCheck, DeletionOutcome } from "../accounts/account-deletion-store.ts";
import type { Guess } from "../accounts/typed-code-store.ts";
import { tables } from "../db/rows.generated.ts";
import { at, get, run, sql, type Database, type Program } from "../db/sql.ts";
import { accountEventBody } from "../sync/event-bodies.ts";
import { safeEqual } from "../util/crypto.ts";
import { releaseBlobsOfAccount } from "./sql-blob-store.ts";
import { appendEvent, deleteEventsOf } from "./sql-event-log.ts";
import { lockAccountData, lockCredentials } from "./locks.ts";

/** Deleting an account (docs/decisions/0030): the code's guess, then one transaction that removes everything. */
export class SqlAccountDeletionStore implements AccountDeletionStore {
  constructor(
    private readonly db: Database,
    /** How long firehose events are kept (ATRIUM_FIREHOSE_BACKFILL_HOURS): the #account event's append prunes by it. */
    private readonly eventRetentionMs: number,
  ) {}

  async check(guess: Guess) {
    return this.db.transaction(function* (): Program<DeletionCodeCheck> {
      const { accountDid, purpose, codeHash, now, maxGuesses } = guess;
      // The conditional UPDATE counts the guess and decides the race, as the typed codes' own guess does
      // (stores/sql-typed-code-store.ts): a concurrent guess on PostgreSQL waits for the row and re-checks the count.
      const row = yield* get(tables.TypedCode.pick("codeHash"), sql`UPDATE "TypedCode" SET "guesses" = "guesses" + 1
        WHERE "accountDid" = ${accountDid} AND "purpose" = ${purpose} AND "expiresAt" > ${at(now)} AND "guesses" < ${maxGuesses}
        RETURNING "codeHash"`);
      if (!row) return "none";
      return safeEqual(row.codeHash, codeHash) ? "right" : "wrong";
    });
  }

  async remove(removal: AccountRemoval) {
    const retentionMs = this.eventRetentionMs;
    return this.db.transaction(function* (): Program<DeletionOutcome> {
      const { did, codeHash, passwordHash, now } = removal;
      // The credentials lock orders this with a password change or reset (SqlAccountStore) and with a second
      // deletion: the one that waited finds the account, and so its code, gone.
      yield* lockCredentials(did);
      const account = yield* get(tables.Account.pick("passwordHash"), sql`SELECT "passwordHash" FROM "Account" WHERE "did" = ${did}`);
      if (!account) return { deleted: false, reason: "code-gone" };
      if (!safeEqual(account.passwordHash, passwordHash)) return { deleted: false, reason: "password-changed" };
      const spent = yield* get(tables.TypedCode.pick("accountDid"), sql`DELETE FROM "TypedCode"
        WHERE "accountDid" = ${did} AND "purpose" = ${"account-deletion"} AND "codeHash" = ${codeHash} AND "expiresAt" > ${at(now)}
        RETURNING "accountDid"`);
      if (!spent) return { deleted: false, reason: "code-gone" };
      return { deleted: true, seq: yield* removeAccount(did, now, retentionMs) };
    });
  }

  async removeByOperator(did: string, now: number) {
    const retentionMs = this.eventRetentionMs;
    return this.db.transaction(function* (): Program<number | undefined> {
      yield* lockCredentials(did);
      const account = yield* get(tables.Account.pick("did"), sql`SELECT "did" FROM "Account" WHERE "did" = ${did}`);
      return account ? yield* removeAccount(did, now, retentionMs) : undefined;
    });
  }
}

/** The removal itself, a step of the caller's transaction; answers the #account event's sequence number. */
function* removeAccount(did: string, now: number, retentionMs: number): Program<number> {
  // The lock every repository commit takes first (SqlRepoStore.applyCommit): a commit already running finishes,
  // event included, before its events are removed here; one that starts later finds no repository and writes nothing.
  // Without it, on PostgreSQL a commit's #commit event could outlive the deletion and be replayed by the firehose.
  // Lock order: credentials (the callers), then data, as everywhere else.
  yield* lockAccountData(did);
  // As the reference PDS does on deleteAccount: the firehose's backfill no longer replays the account's commits.
  yield* run(deleteEventsOf(did));
  // The blobs' bytes are in the content store, one copy per CID shared with any other account that has it: their
  // release, in this transaction, is what lets the sweep after it delete the copies no account has any more
  // (docs/decisions/0043).
  yield* releaseBlobsOfAccount(did, now);
  // Every table keyed by the account's DID refers to "Account" with ON DELETE CASCADE (prisma/schema.prisma):
  // records (and their blob references), repository blocks and head, blobs, preferences, browser sessions,
  // authorization codes, grants (and their access and refresh tokens), remembered consent, passkeys, recovery links
  // and typed codes.
  yield* run(sql`DELETE FROM "Account" WHERE "did" = ${did}`);
  // subscribeRepos lexicon, #account: "active: false … status: deleted" — in the same transaction as the deletion.
  const body = accountEventBody({ did, active: false, status: "deleted", time: new Date(now).toISOString() });
  return yield* appendEvent({ did, type: "account", body }, now, retentionMs);
}
