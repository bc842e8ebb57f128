import { accountStateOf, statusFields } from "../accounts/account-status.ts";
import type { TakedownChange, TakedownStore } from "../accounts/takedown-store.ts";
import { tables } from "../db/rows.generated.ts";
import { at, get, run, sql, type Database, type Program } from "../db/sql.ts";
import { accountEventBody } from "../sync/event-bodies.ts";
import { endSignIns } from "./sql-account-store.ts";
import { appendEvent } from "./sql-event-log.ts";
import { lockAccountData, lockCredentials } from "./locks.ts";

/** Takedowns of accounts, records and blobs (docs/decisions/0051). */
export class SqlTakedownStore implements TakedownStore {
  constructor(
    private readonly db: Database,
    /** How long firehose events are kept (ATRIUM_FIREHOSE_BACKFILL_HOURS): the #account event's append prunes by it. */
    private readonly eventRetentionMs: number,
  ) {}

  async changeAccountTakedown(did: string, change: TakedownChange, now: number) {
    const retentionMs = this.eventRetentionMs;
    return this.db.transaction(function* (): Program<{ found: boolean; changed: boolean }> {
      // The credentials lock orders this with every sign-in that stores a session or issues a code (they check the
      // account is not taken down under it); the data lock, taken by every commit first, with the commits: one either
      // landed before, its event sequenced before the #account event, or waits and then finds the account taken
      // down. Lock order: credentials, then data, as everywhere else.
      yield* lockCredentials(did);
      yield* lockAccountData(did);
      const before = yield* get(tables.Account.pick("deactivatedAt", "takendownAt"), sql`SELECT "deactivatedAt", "takendownAt" FROM "Account" WHERE "did" = ${did}`);
      if (!before) return { found: false, changed: false };
      if (change === null && before.takendownAt === null) return { found: true, changed: false };
      const takendownAt = change === null ? null : (before.takendownAt ?? now);
      yield* run(sql`UPDATE "Account" SET "takendownAt" = ${at(takendownAt)}, "takedownRef" = ${change?.ref ?? null}, "updatedAt" = ${at(now)} WHERE "did" = ${did}`);
      // Every token and session ends at once; none comes back with an untakedown.
      if (change !== null) yield* endSignIns(did);
      if ((before.takendownAt === null) === (takendownAt === null)) return { found: true, changed: false };
      // subscribeRepos lexicon, #account: the account's status as it now is, in the transaction that changed it.
      const status = statusFields(accountStateOf({ deactivatedAt: before.deactivatedAt, takendownAt }));
      const body = accountEventBody({ did, ...status, time: new Date(now).toISOString() });
      yield* appendEvent({ did, type: "account", body }, now, retentionMs);
      return { found: true, changed: true };
    });
  }

  async changeRecordTakedown(did: string, collection: string, rkey: string, change: TakedownChange) {
    return this.db.execute(function* (): Program<boolean> {
      return (yield* run(sql`UPDATE "Record" SET "takedownRef" = ${change?.ref ?? null} WHERE "did" = ${did} AND "collection" = ${collection} AND "rkey" = ${rkey}`)) === 1;
    });
  }

  async recordTakedown(did: string, collection: string, rkey: string) {
    return this.db.execute(function* (): Program<{ cid: string; ref: string | null } | undefined> {
      const row = yield* get(tables.Record.pick("cid", "takedownRef"), sql`SELECT "cid", "takedownRef" FROM "Record"
        WHERE "did" = ${did} AND "collection" = ${collection} AND "rkey" = ${rkey}`);
      return row && { cid: row.cid, ref: row.takedownRef };
    });
  }

  async changeBlobTakedown(did: string, cid: string, change: TakedownChange) {
    return this.db.execute(function* (): Program<boolean> {
      return (yield* run(sql`UPDATE "Blob" SET "takedownRef" = ${change?.ref ?? null} WHERE "did" = ${did} AND "cid" = ${cid}`)) === 1;
    });
  }

  async blobTakedown(did: string, cid: string) {
    return this.db.execute(function* (): Program<{ ref: string | null } | undefined> {
      const row = yield* get(tables.Blob.pick("takedownRef"), sql`SELECT "takedownRef" FROM "Blob" WHERE "did" = ${did} AND "cid" = ${cid}`);
      return row && { ref: row.takedownRef };
    });
  }
}
