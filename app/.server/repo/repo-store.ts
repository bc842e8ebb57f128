import type { ReadableBlockstore } from "@atproto/repo";
import type { CommitActivity } from "../activity/activity-lines.ts";
import type { NewEvent } from "../sync/event-log.ts";
import type { AccountState } from "../accounts/account-status.ts";

export type StoredRecord = { collection: string; rkey: string; cid: string; value: unknown; createdAt: number; updatedAt: number };

/** The head of a repository: its latest commit's CID and revision (TID). */
export type RepoHead = { cid: string; rev: string };

/**
 * How one commit changes the record rows (the MST holds the records' blocks; the rows hold the JSON as written, for
 * getRecord and listRecords). `restamp` gives an existing row its DAG-CBOR CID (the repository migration).
 */
export type RecordChange =
  | { action: "create" | "update"; collection: string; rkey: string; cid: string; json: string; blobCids: readonly string[] }
  | { action: "restamp"; collection: string; rkey: string; cid: string }
  | { action: "delete"; collection: string; rkey: string };

/**
 * A commit formatted and signed outside the write transaction (repo-writer.ts), to be applied in one: everything a
 * commit changes lands together, or nothing does (docs/decisions/0027).
 */
export type PreparedCommit = {
  did: string;
  /** The head it was built on (the compare-and-swap's expected value); null for a repository's first commit. */
  base: RepoHead | null;
  head: RepoHead;
  newBlocks: ReadonlyArray<{ cid: string; bytes: Uint8Array }>;
  /** Blocks the new head no longer reaches; a record block stays while a record row still has its CID. */
  removedCids: readonly string[];
  records: readonly RecordChange[];
  /** Appended to the event log in order, in the same transaction. */
  events: readonly NewEvent[];
  /** The app whose writes these are, counted in the same transaction (docs/decisions/0053); none: not counted. */
  activity?: CommitActivity;
};

/** `state`: whether the account is active, deactivated or taken down (docs/decisions/0031, 0051). */
export type RepoListing = { did: string; head: string; rev: string; state: AccountState };

/**
 * Whether the network may be served an account's repository (accounts/account-status.ts accountStateOf reads the
 * two times), and its head (none before its first commit).
 */
export type RepoAvailability = { deactivatedAt: number | null; takendownAt: number | null; takedownRef: string | null; head: RepoHead | undefined };
export type BlobListing = { cids: string[]; cursor?: string };
export type BlockRow = { cid: string; bytes: Uint8Array };
export type BlockSize = { cid: string; size: number };

/**
 * A repository as of one commit, read on one database snapshot held open while its reader goes at its own pace (a
 * client taking an export: docs/decisions/0042), so that no commit landing meanwhile can take a block away. Its
 * holder must release it; reads after that throw.
 */
export interface RepoSnapshot {
  readonly head: RepoHead;
  /**
   * The account's state: while deactivated or taken down (docs/decisions/0031, 0051), nothing of the repository is
   * served but to its owner or the operator.
   */
  readonly state: AccountState;
  /**
   * The next blocks in CID order after `after` ("" for the first), those added after revision `since` if given: as
   * many as fit in `maxBytes` of content, or the first alone when it is larger; none at the end. `after` is the last
   * CID of the page before.
   */
  blockPage(after: string, options: { since?: string; maxBytes: number }): Promise<BlockRow[]>;
  /** The sizes of those of `cids` that the repository holds (their content is not read). */
  blockSizes(cids: readonly string[]): Promise<BlockSize[]>;
  /** The blocks among `cids` that the repository holds. */
  blocks(cids: readonly string[]): Promise<BlockRow[]>;
  /** The snapshot's blocks for @atproto/repo to read one at a time (a record's proof). */
  blockstore(): ReadableBlockstore;
  release(): Promise<void>;
}

export interface RepoStore {
  /** A record the operator took down is absent here and from listRecords (docs/decisions/0051). */
  getRecord(did: string, collection: string, rkey: string): Promise<StoredRecord | undefined>;
  listRecords(did: string, collection: string, options: { limit: number; cursor?: string; reverse: boolean }): Promise<StoredRecord[]>;
  /**
   * Read-after-write (xrpc/read-after-write/): the account's records written by commits after revision `rev`, oldest
   * first, at most `limit`; none when no record of the account is as old as `rev` (a revision from before the
   * account came here, as the reference checks).
   */
  recordsSinceRev(did: string, rev: string, limit: number): Promise<StoredRecord[]>;
  /** Every record row of an account (the repository migration), JSON as written. */
  recordsOf(did: string): Promise<Array<{ collection: string; rkey: string; value: string }>>;
  getPreferences(did: string): Promise<unknown[]>;
  /**
   * Replaces the account's preferences with `preferences`, except the stored ones whose $type is in `keep`, which stay
   * (first, as they were), read and written in one transaction (repo/preferences.ts says which).
   */
  putPreferences(did: string, preferences: unknown[], now: number, keep?: readonly string[]): Promise<void>;

  head(did: string): Promise<RepoHead | undefined>;
  /**
   * What a commit is built on, in one read: the head (none before the first commit) and the account's signing key;
   * undefined when there is no such account (docs/decisions/0037).
   */
  commitBase(did: string): Promise<{ head: RepoHead | undefined; signingKey: string } | undefined>;
  /** The account's blocks, for @atproto/repo to read (cached: block-cache.ts). */
  blockstore(did: string): ReadableBlockstore;
  /**
   * One transaction: moves the head from `base` to `head` if it is still at `base` (compare-and-swap), stores the
   * blocks, changes the record rows and their blob references, appends the events. False, with nothing written,
   * when the head had moved; AccountDeactivated or AccountTakedown, with nothing written, when the account is
   * deactivated or taken down.
   */
  applyCommit(commit: PreparedCommit, now: number): Promise<boolean>;
  /** The account's status and head in one read; undefined when there is no such account. */
  availability(did: string): Promise<RepoAvailability | undefined>;
  /**
   * One transaction: deactivates or reactivates the account and appends `events`, under the lock every commit of
   * the account takes, so that no commit lands between the change and its events, nor after a deactivation
   * (docs/decisions/0031). "unchanged", with nothing appended, when the account already had that status;
   * "takendown", with nothing changed, when the operator took the account down (docs/decisions/0051); "head-moved",
   * with nothing written, when `change.head` is given (the head the events name: a reactivation's #sync) and the
   * account's head is another (an import landed: docs/decisions/0055).
   */
  changeAccountStatus(
    did: string,
    change: { deactivated: boolean; head?: string | null },
    now: number,
    events: readonly NewEvent[],
  ): Promise<"changed" | "unchanged" | "no-account" | "takendown" | "head-moved">;
  /**
   * Appends the account's #identity event with its handle as it is now, read under the lock every commit and the
   * account's deletion take: an account deleted meanwhile gets none (its deletion removed its events and ends them
   * with #account). False when there is no such account.
   */
  announceIdentity(did: string, now: number): Promise<boolean>;
  /**
   * Opens a snapshot of the repository and reads its head on it (docs/decisions/0042); undefined, with nothing held,
   * when the account has no repository. `maxHoldMs`: the database's own bound on a snapshot its holder fails to
   * release (Database.holdSnapshot).
   */
  openSnapshot(did: string, options: { maxHoldMs: number }): Promise<RepoSnapshot | undefined>;
  /** Repositories in DID order after `cursor`. */
  listRepos(options: { cursor?: string; limit: number }): Promise<RepoListing[]>;
  /** Accounts that have no repository yet (made before repositories existed, or interrupted at creation). */
  accountsWithoutRepository(limit: number): Promise<Array<{ did: string; signingKey: string }>>;
  /** CIDs of the blobs the account's records reference, in CID order after `cursor`; with `since`, of records written after that revision. */
  listBlobs(did: string, options: { since?: string; cursor?: string; limit: number }): Promise<string[]>;
}
