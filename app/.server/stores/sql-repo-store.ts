import { parseCid, type Cid } from "@atproto/lex-data";
import type { ReadableBlockstore } from "@atproto/repo";
import { shape, type ShapeRow } from "../db/row-shape.ts";
import { tables } from "../db/rows.generated.ts";
import { all, at, BYTEWISE, get, lock, run, send, sql, statementOf, type Database, type Program } from "../db/sql.ts";
import { BlockCache } from "../repo/block-cache.ts";
import { CachedBlockstore } from "../repo/cached-blockstore.ts";
import { accountDeactivated, accountStateOf, accountTakenDown, type AccountState } from "../accounts/account-status.ts";
import type { PreparedCommit, RecordChange, RepoAvailability, RepoHead, RepoListing, RepoStore, StoredRecord } from "../repo/repo-store.ts";
import { identityEventBody } from "../sync/event-bodies.ts";
import type { NewEvent } from "../sync/event-log.ts";
import { appendEvent, sendEvent } from "./sql-event-log.ts";
import { blobReferencesOf, recordBlobReferences, removeExpiredBlobs } from "./sql-blob-store.ts";
import { CleanupGate } from "./expired-rows.ts";
import { openRepoSnapshot } from "./sql-repo-snapshot.ts";
import { cleanupExpiredActivity, countChunks, sendCounts, withCounts, type CountChunk } from "./sql-activity-store.ts";
import { expiredDay } from "../activity/activity-lines.ts";
import { lockAccountData } from "./locks.ts";

const RECORD_ROW = tables.Record.pick("collection", "rkey", "cid", "value", "createdAt", "updatedAt");
type RecordRow = ShapeRow<typeof RECORD_ROW>;

function toRecord(row: RecordRow): StoredRecord {
  return { ...row, value: JSON.parse(row.value) as unknown };
}

/** Whether an account is deactivated or taken down, beside its repository's head (none before its first commit). */
const AVAILABILITY_ROW = shape({ deactivatedAt: "time?", takendownAt: "time?", takedownRef: "string?", cid: "string?", rev: "string?" });
/** What a commit is built on: the account's signing key beside its repository's head. */
const COMMIT_BASE_ROW = shape({ signingKey: "string", cid: "string?", rev: "string?" });
/** A repository's listing: its head's CID is the root's "cid". */
const REPO_LISTING_ROW = shape({ did: "string", head: "string", rev: "string", deactivatedAt: "time?", takendownAt: "time?" });
/** A row that only says something matched. */
const FOUND_ROW = shape({ found: "integer" });

/** Record keys sort bytewise on both engines (getRecord's cursor walks them in that order). */
const LAST_KEY = "\uffff";

/** Blocks kept in memory across commits (block-cache.ts): the MST nodes of the repositories being written. */
const BLOCK_CACHE_BYTES = 32 * 1024 * 1024;

/**
 * A process's commits prune expired events and blobs on one commit in this many (docs/decisions/0037, amendment):
 * fewer than either batch (EVENT_PRUNE_BATCH 20, BLOB_CLEANUP_BATCH 5), so that each process's pruning still deletes
 * more rows than its commits add.
 */
export const COMMITS_PER_CLEANUP = 4;

export type RepoStoreSettings = {
  /** How long a blob may stay unreferenced (the blob store's setting), for the cleanup a record write does. */
  blobGraceMs: number;
  /** How long the event log keeps events (the firehose's backfill window). */
  eventRetentionMs: number;
};

/**
 * Repositories (docs/decisions/0027): the head per account, the blocks, the record rows (JSON as written, with the
 * DAG-CBOR CID) and their blob references (docs/decisions/0008), and the event each commit appends.
 */
export class SqlRepoStore implements RepoStore {
  private readonly cache = new BlockCache(BLOCK_CACHE_BYTES);
  /** Which of this process's commits prune expired events and blobs. */
  private readonly cleanup = new CleanupGate(COMMITS_PER_CLEANUP);
  /**
   * Whether a commit writes its app's counts in the head's swap (withCounts: a data-modifying WITH, which PostgreSQL has
   * and SQLite lacks), rather than in a statement of their own: the same rows either way, in the same transaction; on
   * PostgreSQL one statement less per commit (docs/decisions/0053). The contract suite runs each on its engine.
   */
  private readonly foldsCounts: boolean;

  constructor(
    private readonly db: Database,
    private readonly settings: RepoStoreSettings,
  ) {
    this.foldsCounts = db.engine === "postgresql";
  }

  async getRecord(did: string, collection: string, rkey: string) {
    return this.db.execute(function* (): Program<StoredRecord | undefined> {
      const row = yield* get(RECORD_ROW, sql`SELECT "collection", "rkey", "cid", "value", "createdAt", "updatedAt" FROM "Record"
        WHERE "did" = ${did} AND "collection" = ${collection} AND "rkey" = ${rkey} AND "takedownRef" IS NULL`);
      return row ? toRecord(row) : undefined;
    });
  }

  async listRecords(did: string, collection: string, options: { limit: number; cursor?: string; reverse: boolean }) {
    const { limit, reverse } = options;
    return this.db.execute(function* (): Program<StoredRecord[]> {
      const rows = reverse
        ? yield* all(RECORD_ROW, sql`SELECT "collection", "rkey", "cid", "value", "createdAt", "updatedAt" FROM "Record"
            WHERE "did" = ${did} AND "collection" = ${collection} AND "rkey" ${BYTEWISE} > ${options.cursor ?? ""} AND "takedownRef" IS NULL
            ORDER BY "rkey" ${BYTEWISE} ASC LIMIT ${limit}`)
        : yield* all(RECORD_ROW, sql`SELECT "collection", "rkey", "cid", "value", "createdAt", "updatedAt" FROM "Record"
            WHERE "did" = ${did} AND "collection" = ${collection} AND "rkey" ${BYTEWISE} < ${options.cursor ?? LAST_KEY} AND "takedownRef" IS NULL
            ORDER BY "rkey" ${BYTEWISE} DESC LIMIT ${limit}`);
      return rows.map(toRecord);
    });
  }

  async recordsSinceRev(did: string, rev: string, limit: number) {
    return this.db.execute(function* (): Program<StoredRecord[]> {
      // The (did, repoRev) index serves both. A taken-down record is its owner's no more than anyone's (docs/decisions/0051).
      const rows = yield* all(RECORD_ROW, sql`SELECT "collection", "rkey", "cid", "value", "createdAt", "updatedAt" FROM "Record"
        WHERE "did" = ${did} AND "repoRev" ${BYTEWISE} > ${rev} AND "takedownRef" IS NULL ORDER BY "repoRev" ${BYTEWISE} ASC LIMIT ${limit}`);
      if (rows.length === 0) return [];
      const older = yield* get(FOUND_ROW, sql`SELECT 1 AS "found" FROM "Record" WHERE "did" = ${did} AND "repoRev" ${BYTEWISE} <= ${rev} LIMIT 1`);
      return older ? rows.map(toRecord) : [];
    });
  }

  async recordsOf(did: string) {
    return this.db.execute(function* (): Program<Array<{ collection: string; rkey: string; value: string }>> {
      return yield* all(tables.Record.pick("collection", "rkey", "value"), sql`SELECT "collection", "rkey", "value" FROM "Record" WHERE "did" = ${did}`);
    });
  }

  async getPreferences(did: string) {
    return this.db.execute(function* (): Program<unknown[]> {
      const row = yield* get(tables.Preferences.pick("value"), sql`SELECT "value" FROM "Preferences" WHERE "did" = ${did}`);
      return row ? (JSON.parse(row.value) as unknown[]) : [];
    });
  }

  async putPreferences(did: string, preferences: unknown[], now: number, keep: readonly string[] = []) {
    return this.db.transaction(function* (): Program<void> {
      // The stored preferences of the kept types are read and written back in one step: a write of another caller
      // between the two would otherwise be undone (docs/decisions/0045).
      yield* lock(`preferences:${did}`);
      const row = yield* get(tables.Preferences.pick("value"), sql`SELECT "value" FROM "Preferences" WHERE "did" = ${did}`);
      const stored = row ? (JSON.parse(row.value) as unknown[]) : [];
      const kept = stored.filter((preference) => keep.some((type) => (preference as { $type?: unknown } | null)?.$type === type));
      const value = JSON.stringify([...kept, ...preferences]);
      yield* run(sql`INSERT INTO "Preferences" ("did", "value", "updatedAt") VALUES (${did}, ${value}, ${at(now)})
        ON CONFLICT ("did") DO UPDATE SET "value" = excluded."value", "updatedAt" = excluded."updatedAt"`);
    });
  }

  async head(did: string) {
    return this.db.execute(function* (): Program<RepoHead | undefined> {
      return yield* get(tables.RepoRoot.pick("cid", "rev"), sql`SELECT "cid", "rev" FROM "RepoRoot" WHERE "did" = ${did}`);
    });
  }

  async commitBase(did: string) {
    const row = await this.db.execute(function* (): Program<ShapeRow<typeof COMMIT_BASE_ROW> | undefined> {
      return yield* get(COMMIT_BASE_ROW, sql`SELECT a."signingKey" AS "signingKey", r."cid" AS "cid", r."rev" AS "rev"
        FROM "Account" a LEFT JOIN "RepoRoot" r ON r."did" = a."did" WHERE a."did" = ${did}`);
    });
    return row && { head: joinedHead(row), signingKey: row.signingKey };
  }

  blockstore(did: string): ReadableBlockstore {
    return new SqlBlockstore(this.db, did, this.cache);
  }

  async applyCommit(commit: PreparedCommit, now: number): Promise<boolean> {
    const { blobGraceMs, eventRetentionMs } = this.settings;
    const foldsCounts = this.foldsCounts;
    // Decided once, outside the program, which PostgreSQL may run again after a deadlock.
    const prune = this.cleanup.due();
    const { activity } = commit;
    const counts = activity ? countChunks(commit.did, activity.app, activity.day, activity.counts, now) : [];
    // The app's counts land with its commit or not at all; under the account lock, so the day's cap holds
    // (docs/decisions/0053). On PostgreSQL the first statement of them is the head's swap itself (withCounts).
    const [folded, sent] = foldsCounts ? [counts[0], counts.slice(1)] : [undefined, counts];
    try {
      await this.db.transaction(function* (): Program<void> {
        yield* lockAccountData(commit.did);
        if (!(yield* swapHead(commit, now, folded))) {
          // The swap also fails on a deactivated or taken-down account (docs/decisions/0031, 0051): say so rather
          // than rebuild.
          const state = yield* stateOf(commit.did);
          if (state === "takendown") throw accountTakenDown();
          if (state === "deactivated") throw accountDeactivated();
          throw new HeadMoved();
        }
        yield* insertBlocks(commit);
        for (const change of commit.records) yield* applyRecordChange(commit.did, change, commit.head.rev, now);
        yield* removeBlocks(commit);
        // The rest of the counts (all of them on SQLite), sent ahead: on PostgreSQL no round trip of their own.
        yield* sendCounts(sent);
        for (const event of commit.events) yield* sendEvent(event, now, eventRetentionMs, prune);
        if (prune) yield* removeExpiredBlobs(now, blobGraceMs);
        if (prune && activity) yield* cleanupExpiredActivity(expiredDay(now));
      });
    } catch (error) {
      // Thrown inside the transaction: nothing was written, the cleanup included.
      if (prune) this.cleanup.missed();
      if (error instanceof HeadMoved) return false;
      throw error;
    }
    for (const block of commit.newBlocks) this.cache.set(block.cid, block.bytes);
    return true;
  }

  async availability(did: string) {
    const row = await this.db.execute(function* (): Program<ShapeRow<typeof AVAILABILITY_ROW> | undefined> {
      return yield* get(AVAILABILITY_ROW, sql`SELECT a."deactivatedAt" AS "deactivatedAt", a."takendownAt" AS "takendownAt", a."takedownRef" AS "takedownRef",
          r."cid" AS "cid", r."rev" AS "rev"
        FROM "Account" a LEFT JOIN "RepoRoot" r ON r."did" = a."did" WHERE a."did" = ${did}`);
    });
    return row && ({ deactivatedAt: row.deactivatedAt, takendownAt: row.takendownAt, takedownRef: row.takedownRef, head: joinedHead(row) } satisfies RepoAvailability);
  }

  async changeAccountStatus(did: string, change: { deactivated: boolean; head?: string | null }, now: number, events: readonly NewEvent[]) {
    const { eventRetentionMs } = this.settings;
    return this.db.transaction(function* (): Program<"changed" | "unchanged" | "no-account" | "takendown" | "head-moved"> {
      // The lock every commit of the account takes first (applyCommit): a commit either landed before this change,
      // with its event sequenced before the #account event, or waits and then finds the account deactivated. A
      // takedown takes it too (SqlTakedownStore): a taken-down account's status is the operator's (docs/decisions/0051).
      yield* lockAccountData(did);
      if (change.head !== undefined) {
        const root = yield* get(tables.RepoRoot.pick("cid"), sql`SELECT "cid" FROM "RepoRoot" WHERE "did" = ${did}`);
        if ((root?.cid ?? null) !== change.head) return "head-moved";
      }
      const changed = change.deactivated
        ? yield* run(sql`UPDATE "Account" SET "deactivatedAt" = ${at(now)}, "updatedAt" = ${at(now)} WHERE "did" = ${did} AND "deactivatedAt" IS NULL AND "takendownAt" IS NULL`)
        : yield* run(sql`UPDATE "Account" SET "deactivatedAt" = NULL, "updatedAt" = ${at(now)} WHERE "did" = ${did} AND "deactivatedAt" IS NOT NULL AND "takendownAt" IS NULL`);
      if (changed === 0) {
        const found = yield* get(tables.Account.pick("takendownAt"), sql`SELECT "takendownAt" FROM "Account" WHERE "did" = ${did}`);
        return !found ? "no-account" : found.takendownAt !== null ? "takendown" : "unchanged";
      }
      for (const event of events) yield* appendEvent(event, now, eventRetentionMs);
      return "changed";
    });
  }

  async announceIdentity(did: string, now: number) {
    const { eventRetentionMs } = this.settings;
    return this.db.transaction(function* (): Program<boolean> {
      // The lock the account's deletion takes before it removes the account's events (sql-account-deletion-store.ts).
      yield* lockAccountData(did);
      const account = yield* get(tables.Account.pick("handle"), sql`SELECT "handle" FROM "Account" WHERE "did" = ${did}`);
      if (!account) return false;
      const body = identityEventBody({ did, handle: account.handle, time: new Date(now).toISOString() });
      yield* appendEvent({ did, type: "identity", body }, now, eventRetentionMs);
      return true;
    });
  }

  async openSnapshot(did: string, options: { maxHoldMs: number }) {
    return openRepoSnapshot(this.db, this.cache, did, options.maxHoldMs);
  }

  async listRepos(options: { cursor?: string; limit: number }) {
    const { cursor, limit } = options;
    const rows = await this.db.execute(function* (): Program<Array<ShapeRow<typeof REPO_LISTING_ROW>>> {
      return yield* all(REPO_LISTING_ROW, sql`SELECT r."did" AS "did", r."cid" AS "head", r."rev" AS "rev", a."deactivatedAt" AS "deactivatedAt",
          a."takendownAt" AS "takendownAt"
        FROM "RepoRoot" r JOIN "Account" a ON a."did" = r."did" WHERE r."did" ${BYTEWISE} > ${cursor ?? ""}
        ORDER BY r."did" ${BYTEWISE} LIMIT ${limit}`);
    });
    return rows.map(({ deactivatedAt, takendownAt, ...row }): RepoListing => ({ ...row, state: accountStateOf({ deactivatedAt, takendownAt }) }));
  }

  async accountsWithoutRepository(limit: number) {
    return this.db.execute(function* (): Program<Array<{ did: string; signingKey: string }>> {
      return yield* all(tables.Account.pick("did", "signingKey"), sql`SELECT "did", "signingKey" FROM "Account" WHERE NOT EXISTS (SELECT 1 FROM "RepoRoot" WHERE "RepoRoot"."did" = "Account"."did")
        ORDER BY "did" LIMIT ${limit}`);
    });
  }

  async listBlobs(did: string, options: { since?: string; cursor?: string; limit: number }) {
    const { since, limit } = options;
    const cursor = options.cursor ?? "";
    const rows = await this.db.execute(function* (): Program<Array<{ blobCid: string }>> {
      return since === undefined
        ? yield* all(tables.RecordBlob.pick("blobCid"), sql`SELECT "blobCid" FROM "RecordBlob" WHERE "did" = ${did} AND "blobCid" ${BYTEWISE} > ${cursor}
            GROUP BY "blobCid" ORDER BY "blobCid" ${BYTEWISE} LIMIT ${limit}`)
        : yield* all(tables.RecordBlob.pick("blobCid"), sql`SELECT rb."blobCid" FROM "RecordBlob" rb JOIN "Record" r
              ON r."did" = rb."did" AND r."collection" = rb."collection" AND r."rkey" = rb."rkey"
            WHERE rb."did" = ${did} AND r."repoRev" ${BYTEWISE} > ${since} AND rb."blobCid" ${BYTEWISE} > ${cursor}
            GROUP BY rb."blobCid" ORDER BY rb."blobCid" ${BYTEWISE} LIMIT ${limit}`);
    });
    return rows.map((row) => row.blobCid);
  }
}

/** The account's state, or undefined when there is no such account. */
function* stateOf(did: string): Program<AccountState | undefined> {
  const row = yield* get(tables.Account.pick("deactivatedAt", "takendownAt"), sql`SELECT "deactivatedAt", "takendownAt" FROM "Account" WHERE "did" = ${did}`);
  return row && accountStateOf(row);
}

/** The head's first commit: the row, unless another process made it first. */
const INSERT_HEAD = `INSERT INTO "RepoRoot" ("did", "cid", "rev", "updatedAt") VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`;
const insertHead = statementOf(INSERT_HEAD);
/** The head moved from the commit's base, unless the account is deactivated or taken down. */
const SWAP_HEAD = `UPDATE "RepoRoot" SET "cid" = ?, "rev" = ?, "updatedAt" = ?
    WHERE "did" = ? AND "cid" = ?
      AND NOT EXISTS (SELECT 1 FROM "Account" WHERE "did" = ? AND ("deactivatedAt" IS NOT NULL OR "takendownAt" IS NOT NULL))`;
const swapHeadStatement = statementOf(SWAP_HEAD);

/**
 * The compare-and-swap on the head: true when it moved from the commit's base to its new head, and the account is
 * neither deactivated nor taken down (checked in the same statement, so a commit costs no extra read;
 * docs/decisions/0031, 0051). `counts`: the app's counts written in the same statement (PostgreSQL, withCounts), which a
 * swap that fails takes back with the transaction it aborts.
 */
function* swapHead(commit: PreparedCommit, now: number, counts: CountChunk | undefined): Program<boolean> {
  const { did, base, head } = commit;
  const [text, statement, values] =
    base === null
      ? [INSERT_HEAD, insertHead, [did, head.cid, head.rev, at(now)]]
      : [SWAP_HEAD, swapHeadStatement, [head.cid, head.rev, at(now), did, base.cid, did]];
  return (yield* run(counts ? withCounts(text, values, counts) : statement(...values))) === 1;
}

/**
 * Blocks written or removed per statement. A single-record commit adds and removes a handful (the MST path, the
 * record, the commit): one statement each rather than one per block, which on PostgreSQL is a round trip each.
 * 50 rows of 4 values stay far below both engines' limits on parameters.
 */
const BLOCKS_PER_STATEMENT = 50;

const insertStatements = new Map<number, ReturnType<typeof statementOf>>();
const removeStatements = new Map<number, ReturnType<typeof statementOf>>();

/** One statement per size (the engines prepare each once), made when first needed. */
function insertBlocksStatement(count: number) {
  let statement = insertStatements.get(count);
  if (!statement) {
    const rows = Array.from({ length: count }, () => "(?, ?, ?, ?)").join(", ");
    statement = statementOf(`INSERT INTO "RepoBlock" ("did", "cid", "repoRev", "content") VALUES ${rows} ON CONFLICT DO NOTHING`);
    insertStatements.set(count, statement);
  }
  return statement;
}

function removeBlocksStatement(count: number) {
  let statement = removeStatements.get(count);
  if (!statement) {
    const cids = Array.from({ length: count }, () => "?").join(", ");
    // A record block stays while a record row still has its CID (the same record written under two keys).
    statement = statementOf(`DELETE FROM "RepoBlock" WHERE "did" = ? AND "cid" IN (${cids})
      AND NOT EXISTS (SELECT 1 FROM "Record" WHERE "Record"."did" = "RepoBlock"."did" AND "Record"."cid" = "RepoBlock"."cid")`);
    removeStatements.set(count, statement);
  }
  return statement;
}

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let start = 0; start < items.length; start += BLOCKS_PER_STATEMENT) out.push(items.slice(start, start + BLOCKS_PER_STATEMENT));
  return out;
}

function* insertBlocks(commit: PreparedCommit): Program<void> {
  for (const blocks of chunks(commit.newBlocks)) {
    yield* send(insertBlocksStatement(blocks.length)(...blocks.flatMap((block) => [commit.did, block.cid, commit.head.rev, block.bytes])));
  }
}

/** Blocks the new head no longer reaches; after the record rows changed, so that a deleted record's block goes too. */
function* removeBlocks(commit: PreparedCommit): Program<void> {
  for (const cids of chunks(commit.removedCids)) yield* send(removeBlocksStatement(cids.length)(commit.did, ...cids));
}

/** One record row, with its blob references (docs/decisions/0008), as the commit changes it. */
function* applyRecordChange(did: string, change: RecordChange, rev: string, now: number): Program<void> {
  const { collection, rkey } = change;
  if (change.action === "restamp") {
    yield* send(sql`UPDATE "Record" SET "cid" = ${change.cid}, "repoRev" = ${rev} WHERE "did" = ${did} AND "collection" = ${collection} AND "rkey" = ${rkey}`);
    return;
  }
  const previous = change.action === "create" ? [] : yield* blobReferencesOf(did, collection, rkey);
  if (change.action === "delete") {
    yield* send(sql`DELETE FROM "Record" WHERE "did" = ${did} AND "collection" = ${collection} AND "rkey" = ${rkey}`);
    yield* recordBlobReferences(did, collection, rkey, previous, [], now);
    return;
  }
  // The head's compare-and-swap already decided that the key was free (create) or held (update).
  yield* send(sql`INSERT INTO "Record" ("did", "collection", "rkey", "cid", "value", "repoRev", "createdAt", "updatedAt")
    VALUES (${did}, ${collection}, ${rkey}, ${change.cid}, ${change.json}, ${rev}, ${at(now)}, ${at(now)})
    ON CONFLICT ("did", "collection", "rkey") DO UPDATE SET "cid" = excluded."cid", "value" = excluded."value",
      "repoRev" = excluded."repoRev", "updatedAt" = excluded."updatedAt"`);
  yield* recordBlobReferences(did, collection, rkey, previous, change.blobCids, now);
}

class HeadMoved extends Error {
  constructor() {
    super("the repository's head moved");
  }
}

/** The head from an account row LEFT JOINed with its RepoRoot: none while the account has no repository. */
function joinedHead(row: { cid: string | null; rev: string | null }): RepoHead | undefined {
  return row.cid !== null && row.rev !== null ? { cid: row.cid, rev: row.rev } : undefined;
}

/** An account's blocks as @atproto/repo reads them: from the shared cache, else one indexed read (which fills it). */
class SqlBlockstore extends CachedBlockstore {
  constructor(
    private readonly db: Database,
    private readonly did: string,
    cache: BlockCache,
  ) {
    super(cache, true);
  }

  protected async readBlock(cid: string): Promise<Uint8Array | undefined> {
    const did = this.did;
    const row = await this.db.execute(function* (): Program<{ content: Uint8Array } | undefined> {
      return yield* get(tables.RepoBlock.pick("content"), sql`SELECT "content" FROM "RepoBlock" WHERE "did" = ${did} AND "cid" = ${cid}`);
    });
    return row?.content;
  }
}

/** Parses a stored CID (the rows hold their string form). */
export function storedCid(value: string): Cid {
  return parseCid(value);
}
