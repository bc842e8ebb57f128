import { MemoryBlockstore, Repo, WriteOpAction, type CommitData, type RecordWriteOp, type RepoStorage } from "@atproto/repo";
import type { Keypair } from "@atproto/crypto";
import type { SigningKeys } from "../accounts/signing-key.ts";
import { blockEntries, cidStrings } from "./block-keys.ts";
import { formatCommit, KeptTrees, loadRepoAt, type CommitOp, type RepoAtCommit } from "./commit-builder.ts";
import { AtriumError } from "../errors/atrium-error.ts";
import { accountEventBody, commitEventBody, identityEventBody, syncEventBody, type CommitEventOp } from "../sync/event-bodies.ts";
import type { NewEvent } from "../sync/event-log.ts";
import { blobCidsIn } from "./blob-refs.ts";
import { isNsid, isRecordKey } from "./identifiers.ts";
import { recordData, RecordDataError, type RecordData } from "./record-data.ts";
import { checkNewRecord, InvalidRecordError, type ValidationStatus } from "./record-lexicons.ts";
import type { PreparedCommit, RecordChange, RepoHead, RepoStore } from "./repo-store.ts";
import { dayOf, writeCounts, type ActivityApp, type CommitActivity } from "../activity/activity-lines.ts";

/** com.atproto.repo.applyWrites: "Bulk write operations are limited to 200" (and the reference PDS's 2 MB commit). */
export const MAX_COMMIT_OPS = 200;
export const MAX_COMMIT_BYTES = 2 * 1024 * 1024;
/**
 * Commits rebuilt when another writer moved the head first. Writers of one process take turns per repository
 * (RepoWriter.inTurn), so only other processes' writers can win a round against this one.
 */
const MAX_ATTEMPTS = 32;

/** A refusal of the repository, with its XRPC name (atproto XRPC conventions). */
export class RepoError extends AtriumError {
  constructor(status: number, name: string, message: string, options: { retryAfterSeconds?: number } = {}) {
    super(name, message, { status, xrpcName: name, ...options });
  }
}

type JsonRecord = Record<string, unknown>;

/**
 * One requested write. `put` (putRecord) is a create when the key is free and an update when it is not;
 * `swapRecord` on put and delete: null means "only if absent", a CID "only if this is the current version".
 */
export type WriteRequest =
  | { action: "create" | "update"; collection: string; rkey: string; value: JsonRecord }
  | { action: "put"; collection: string; rkey: string; value: JsonRecord; swapRecord?: string | null }
  | { action: "delete"; collection: string; rkey: string; swapRecord?: string };

/** `validationStatus` for creates and updates: what the lexicon check said, absent when `validate` was false. */
export type WriteResult = { action: "create" | "update" | "delete"; collection: string; rkey: string; cid?: string; validationStatus?: ValidationStatus };

/**
 * How a call is written. `validate` as com.atproto.repo.applyWrites defines it (record-lexicons.ts): true requires
 * a known lexicon, unset validates known collections only, false validates none.
 */
export type WriteOptions = {
  swapCommit?: string;
  validate?: boolean;
  /** The app whose activity the writes count as, in the commit's own transaction (docs/decisions/0053); none: not counted. */
  activity?: ActivityApp;
};

/** A record ready for the commit: its block, and what its lexicon check said. */
type PreparedRecord = RecordData & { validationStatus: ValidationStatus | undefined };

/** What a call committed: the new head and each write's outcome; no commit when there was nothing to change. */
export type Committed = { commit: RepoHead | undefined; results: WriteResult[] };

type Resolved = { ops: CommitOp[]; eventOps: CommitEventOp[]; changes: RecordChange[]; results: WriteResult[] };

/**
 * Makes each account's records an atproto repository (docs/decisions/0027): every call is one commit, formatted and
 * signed with @atproto/repo outside the write transaction, then applied by the store in one transaction that moves
 * the head by compare-and-swap, together with the record rows, blob references, blocks and the commit's event.
 * When another writer moved the head first, the commit is rebuilt on the new head.
 */
export class RepoWriter {
  /** The last queued write of each repository this process is writing. */
  private readonly turns = new Map<string, Promise<unknown>>();
  /** Each repository's tree as this process's last commit left it, decoded (docs/decisions/0037). */
  private readonly trees = new KeptTrees();

  constructor(
    private readonly store: RepoStore,
    /** Opens the account's sealed signing key to sign its commits (docs/decisions/0050). */
    private readonly signingKeys: SigningKeys,
    private readonly now: () => number,
    /** Told after each commit and its events landed (the firehose reads them at once: docs/decisions/0029). */
    private readonly onAppended: () => void = () => {},
  ) {}

  /** Applies a prepared commit in one transaction; false when the head moved. */
  private async apply(commit: Parameters<RepoStore["applyCommit"]>[0]): Promise<boolean> {
    const applied = await this.store.applyCommit(commit, this.now());
    if (applied) this.onAppended();
    return applied;
  }

  /**
   * A new account's repository: its first, empty commit, with the #identity and #account (active) events that
   * announce the account. Nothing happens when it has one already. `announced: false` (an account created
   * deactivated to move here, docs/decisions/0055): the commit alone, as the reference sequences nothing for it;
   * activateAccount announces the account and the repository its import brought.
   */
  async createRepository(account: { did: string; signingKey: string; handle: string }, options: { announced: boolean } = { announced: true }): Promise<void> {
    const { did } = account;
    const commit = await Repo.formatInitCommit(new MemoryBlockstore(), did, await this.signingKeys.keypair(did, account.signingKey));
    const time = new Date(this.now()).toISOString();
    const commitEvent = await commitEventBody({ did, commit: commit.cid.toString(), rev: commit.rev, since: null, blocks: commit.newBlocks, ops: [], time });
    const events: NewEvent[] = [
      { did, type: "identity", body: identityEventBody({ did, handle: account.handle, time }) },
      { did, type: "account", body: accountEventBody({ did, active: true, time }) },
      { did, type: "commit", body: commitEvent },
    ];
    await this.apply(prepared(did, null, commit, [], options.announced ? events : []));
  }

  /**
   * Gives an account made before repositories existed its first commit, holding every record it has (their CIDs
   * become DAG-CBOR CIDs). A record the data model cannot hold is left out and its row deleted; its path and reason
   * are returned so that the caller can log them. A #sync event announces the repository. Idempotent: an account
   * that has a repository already is left alone.
   */
  async migrateAccount(account: { did: string; signingKey: string }): Promise<{ migrated: boolean; dropped: Array<{ path: string; reason: string }> }> {
    const { did } = account;
    const creates: RecordWriteOp[] = [];
    const changes: RecordChange[] = [];
    const dropped: Array<{ path: string; reason: string }> = [];
    for (const row of await this.store.recordsOf(did)) {
      const path = `${row.collection}/${row.rkey}`;
      const data = await storableRecord(row.collection, row.rkey, row.value);
      if (typeof data === "string") {
        dropped.push({ path, reason: data });
        changes.push({ action: "delete", collection: row.collection, rkey: row.rkey });
        continue;
      }
      creates.push({ action: WriteOpAction.Create, collection: row.collection as never, rkey: row.rkey, record: data.lex });
      changes.push({ action: "restamp", collection: row.collection, rkey: row.rkey, cid: data.cid });
    }
    const commit = await Repo.formatInitCommit(new MemoryBlockstore(), did, await this.signingKeys.keypair(did, account.signingKey), creates as never);
    const commitBlock = commit.newBlocks.get(commit.cid)!;
    const time = new Date(this.now()).toISOString();
    const event: NewEvent = { did, type: "sync", body: await syncEventBody({ did, commit: commit.cid, commitBlock, rev: commit.rev, time }) };
    const migrated = await this.apply(prepared(did, null, commit, changes, [event]));
    return { migrated, dropped };
  }

  /** One commit holding exactly these writes, or a refusal that wrote nothing. */
  async write(did: string, writes: WriteRequest[], options: WriteOptions = {}): Promise<Committed> {
    if (writes.length > MAX_COMMIT_OPS) throw new RepoError(400, "InvalidRequest", `A commit holds at most ${MAX_COMMIT_OPS} writes; this one has ${writes.length}`);
    const data = await Promise.all(
      writes.map((write, index) => (write.action === "delete" ? Promise.resolve(undefined) : preparedRecord(write, options.validate, writes.length > 1 ? ` (writes[${index}])` : ""))),
    );
    const bytes = data.reduce((sum, item) => sum + (item?.bytes ?? 0), 0);
    if (bytes > MAX_COMMIT_BYTES) throw new RepoError(400, "InvalidRequest", `A commit holds at most ${MAX_COMMIT_BYTES} bytes of records; this one has ${bytes}`);
    return this.inTurn(did, () => this.commit(did, writes, data, options));
  }

  /**
   * Runs the writes of one repository in this process one after another: concurrent writers would otherwise all
   * build on the same head and all but one rebuild. Other processes are still excluded by the compare-and-swap.
   */
  private async inTurn<T>(did: string, work: () => Promise<T>): Promise<T> {
    const previous = this.turns.get(did) ?? Promise.resolve();
    const mine = previous.then(work, work);
    const settled = mine.then(
      () => undefined,
      () => undefined,
    );
    this.turns.set(did, settled);
    try {
      return await mine;
    } finally {
      if (this.turns.get(did) === settled) this.turns.delete(did);
    }
  }

  private async commit(did: string, writes: WriteRequest[], data: Array<PreparedRecord | undefined>, options: WriteOptions): Promise<Committed> {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      // Unread: the head this process's last commit left, trusted only as far as the compare-and-swap confirms it
      // (docs/decisions/0037). Not with swapCommit, which must be compared with the database's head.
      const kept = attempt === 1 && options.swapCommit === undefined ? this.trees.latest(did) : undefined;
      // Else the head and the signing key in one read (the keypair itself is parsed once per key: signing-key.ts).
      const base = kept ?? (await this.store.commitBase(did));
      const head = base?.head;
      if (!base || !head) throw new RepoError(400, "RepoNotFound", `Could not find repo for DID: ${did}`);
      // com.atproto.repo.applyWrites: swapCommit "If provided, the entire operation will fail if the current repo commit CID does not match this value."
      if (options.swapCommit !== undefined && options.swapCommit !== head.cid) throw new RepoError(400, "InvalidSwap", `The repository's commit is not ${options.swapCommit}`);
      const built = await this.buildCommit(did, head, writes, data, await this.signingKeys.keypair(did, base.signingKey)).catch(async (error: unknown) => {
        // A refusal found on an unread head (a record that another process has since deleted, say) is checked.
        if (kept && !(await this.isHead(did, head))) return "head-moved" as const;
        throw error;
      });
      if (built === "head-moved") continue;
      const { repo, resolved, formatted } = built;
      // deleteRecord of a record that is not there: nothing to commit (as the reference PDS answers).
      if (!formatted) {
        if (kept && !(await this.isHead(did, head))) continue;
        return { commit: undefined, results: resolved.results };
      }
      const { commit } = formatted;
      const time = new Date(this.now()).toISOString();
      const event: NewEvent = {
        did,
        type: "commit",
        body: await commitEventBody({
          did,
          commit: commit.cid.toString(),
          rev: commit.rev,
          since: repo.rev,
          prevData: repo.dataCid.toString(),
          blocks: commit.relevantBlocks,
          ops: resolved.eventOps,
          time,
        }),
      };
      const activity: CommitActivity | undefined = options.activity && { app: options.activity, day: dayOf(this.now()), counts: writeCounts(resolved.results) };
      if (await this.apply({ ...prepared(did, head, commit, resolved.changes, [event]), activity })) {
        this.trees.keep(did, repo, formatted.next, base.signingKey);
        return { commit: { cid: commit.cid.toString(), rev: commit.rev }, results: resolved.results };
      }
      // Another process moved the head: its tree is read from the database on the next attempt.
      this.trees.forget(did);
    }
    throw new RepoError(503, "RepoBusy", "The repository is being written by others at this moment; try again", { retryAfterSeconds: 1 });
  }

  private async isHead(did: string, head: RepoHead): Promise<boolean> {
    return (await this.store.head(did))?.cid === head.cid;
  }

  /**
   * Formats the commit on `head`: on the tree this process's last commit left when that is the head, else on the
   * head read lazily from the database. Another process's commit may remove blocks of `head` while this one walks
   * its MST (blocks the new head no longer reaches are deleted): a missing block on a head that has moved means
   * "build again". Building only reads: the blocks are written by the store, in the commit's transaction.
   */
  private async buildCommit(did: string, head: RepoHead, writes: WriteRequest[], data: Array<PreparedRecord | undefined>, keypair: Keypair) {
    try {
      const repo = this.trees.at(did, head.cid) ?? (await loadRepoAt(this.store.blockstore(did) as RepoStorage, head.cid));
      const resolved = await resolveWrites(repo, writes, data);
      const formatted = resolved.ops.length === 0 ? undefined : await formatCommit(did, repo, resolved.ops, keypair);
      return { repo, resolved, formatted };
    } catch (error) {
      if (error instanceof RepoError) throw error;
      this.trees.forget(did);
      if (!(await this.isHead(did, head))) return "head-moved" as const;
      throw error;
    }
  }
}

function prepared(did: string, base: RepoHead | null, commit: CommitData, records: RecordChange[], events: NewEvent[]): PreparedCommit {
  return {
    did,
    base,
    head: { cid: commit.cid.toString(), rev: commit.rev },
    newBlocks: blockEntries(commit.newBlocks),
    removedCids: cidStrings(commit.removedCids),
    records,
    events,
  };
}

/**
 * A new record's block and its lexicon check (record-lexicons.ts), or 400 InvalidRecord saying what is wrong, and
 * where in a batch (`which`: " (writes[3])", as applyWrites numbers its writes from 0).
 */
async function preparedRecord(write: WriteRequest & { value: JsonRecord }, validate: boolean | undefined, which: string): Promise<PreparedRecord> {
  let data: RecordData;
  try {
    data = await recordData(write.value);
  } catch (error) {
    // atproto data model: what it cannot hold (floats, a bad $type, a malformed $link, $bytes or blob, a lone
    // surrogate) is refused.
    if (error instanceof RecordDataError) throw new RepoError(400, "InvalidRecord", `The record is not valid atproto data${which}: ${error.message}`);
    throw error;
  }
  try {
    return { ...data, validationStatus: await checkNewRecord(write.collection, write.rkey, data.lex, validate) };
  } catch (error) {
    if (error instanceof InvalidRecordError) throw new RepoError(400, "InvalidRecord", `${error.message}${which}`);
    throw error;
  }
}

/** A stored record's data-model form, or why it cannot be in a repository. */
async function storableRecord(collection: string, rkey: string, json: string): Promise<RecordData | string> {
  if (!isNsid(collection) || !isRecordKey(rkey)) return "its collection or record key is not valid atproto syntax";
  try {
    const value = JSON.parse(json) as unknown;
    if (value === null || typeof value !== "object" || Array.isArray(value)) return "it is not a JSON object";
    return await recordData(value as JsonRecord);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/**
 * The operations of a call against the repository it is built on (the MST, not the rows: the compare-and-swap
 * checks this very head): a put becomes a create or an update, a create of a taken key, an update of a free one or
 * a swapRecord that does not match refuses the whole call.
 */
async function resolveWrites(repo: RepoAtCommit, writes: WriteRequest[], data: Array<PreparedRecord | undefined>): Promise<Resolved> {
  const resolved: Resolved = { ops: [], eventOps: [], changes: [], results: [] };
  const current = new Map<string, string | null>();
  for (const [index, write] of writes.entries()) {
    const path = `${write.collection}/${write.rkey}`;
    const existing = current.has(path) ? current.get(path)! : ((await repo.data.get(path))?.toString() ?? null);
    if ((write.action === "put" || write.action === "delete") && write.swapRecord !== undefined && write.swapRecord !== existing) {
      throw new RepoError(400, "InvalidSwap", `The record at ${path} is not the version given in swapRecord`);
    }
    if (write.action === "delete") {
      if (existing === null) {
        if (writes.length === 1) return { ...resolved, results: [{ action: "delete", collection: write.collection, rkey: write.rkey }] };
        throw new RepoError(400, "InvalidRequest", `Could not find a record to delete at ${path}`);
      }
      addDelete(resolved, write, path, existing);
      current.set(path, null);
      continue;
    }
    const action = write.action === "put" ? (existing === null ? "create" : "update") : write.action;
    if (action === "create" && existing !== null) throw new RepoError(400, "RecordAlreadyExists", `A record already exists at ${path}`);
    // An update never creates: the reference PDS fails it ("Could not find a record with key").
    if (action === "update" && existing === null) throw new RepoError(400, "InvalidRequest", `Could not find a record to update at ${path}; create it instead`);
    const record = data[index]!;
    addWrite(resolved, action, write, path, record, existing);
    current.set(path, record.cid);
  }
  return resolved;
}

function addDelete(resolved: Resolved, write: WriteRequest, path: string, existing: string): void {
  resolved.ops.push({ action: "delete", path });
  resolved.eventOps.push({ action: "delete", path, cid: null, prev: existing });
  resolved.changes.push({ action: "delete", collection: write.collection, rkey: write.rkey });
  resolved.results.push({ action: "delete", collection: write.collection, rkey: write.rkey });
}

function addWrite(resolved: Resolved, action: "create" | "update", write: WriteRequest & { value: JsonRecord }, path: string, record: PreparedRecord, existing: string | null): void {
  resolved.ops.push({ action, path, cid: record.cidOf, block: record.block });
  resolved.eventOps.push(action === "create" ? { action, path, cid: record.cid } : { action, path, cid: record.cid, prev: existing! });
  resolved.changes.push({ action, collection: write.collection, rkey: write.rkey, cid: record.cid, json: JSON.stringify(write.value), blobCids: blobCidsIn(write.value) });
  resolved.results.push({ action, collection: write.collection, rkey: write.rkey, cid: record.cid, validationStatus: record.validationStatus });
}
