import { TID } from "@atproto/common-web";
import type { Keypair } from "@atproto/crypto";
import { encode } from "@atproto/lex-cbor";
import { cidForCbor, parseCid } from "@atproto/lex-data";
import { lexToJson } from "@atproto/lex-json";
import { cborToLexRecord, def, parseDataKey, parseObjByDef, readCarStream, signCommit, verifyCommitSig, type Commit } from "@atproto/repo";
import { AtriumError } from "../errors/atrium-error.ts";
import { isBodyTooLarge } from "../http/limits.ts";
import { blobCidsIn } from "./blob-refs.ts";
import { canonicalNsid, isNsid, isRecordKey } from "./identifiers.ts";
import { MstError, walkMst, type MstLeaf } from "./mst-walk.ts";
import type { RepoImportStore, StagedRecord } from "./repo-import-store.ts";
import type { RepoHead, RepoStore } from "./repo-store.ts";

/** A refused import (com.atproto.repo.importRepo answers 400 InvalidRequest, as the reference PDS does). */
export class RepoImportError extends AtriumError {
  constructor(message: string, options: { status?: number; xrpcName?: string } = {}) {
    super("repo_import_refused", message, { status: options.status ?? 400, xrpcName: options.xrpcName ?? "InvalidRequest" });
  }
}

export type RepoImportSettings = {
  /** How long an import's staged rows may outlive a crash before the next import's start removes them. */
  stagedForMs: number;
};

export type RepoImportDependencies = {
  repo: RepoStore;
  imports: RepoImportStore;
  /** The account's signing key, opened from what its row stores (it signs the commit that takes the import in). */
  signingKeypair: (did: string, stored: string) => Promise<Keypair>;
  /**
   * The did:keys the CAR's commit may be signed with: the `#atproto` key of the DID's document as the network
   * resolves it now, and the account's own key here (a CAR this server exported, or one imported again after the
   * DID document moved here).
   */
  trustedKeys: (did: string) => Promise<string[]>;
  now: () => number;
};

/** What an import took in: the account's new head and how many records it holds. */
export type ImportResult = { head: RepoHead; records: number };

/** Blocks staged per write, and their bytes at most: memory held by the import stays about this much. */
const STAGE_BLOCKS = 512;
const STAGE_BYTES = 1024 * 1024;

/**
 * com.atproto.repo.importRepo (docs/decisions/0055): an account being moved here takes in the repository its old
 * server exported (com.atproto.sync.getRepo's CAR), as the reference PDS imports it, streamed and verified:
 *
 * 1. The CAR is read as it arrives (@atproto/repo's readCarStream, which checks each block's CID against its bytes)
 *    and its blocks staged in the database, a batch at a time: memory does not grow with the repository.
 * 2. Its one root must be a commit of this account's DID, signed by a key the DID trusts (its document's `#atproto`
 *    key, or the account's own here).
 * 3. The commit's tree is walked from the staged blocks (repo/mst-walk.ts: every node checked, keys sorted and unique
 *    across the tree, layers consistent); each leaf's record block must be there and decode as a map. Records are not
 *    checked against their lexicons: the repository is the person's as it was signed elsewhere, and the reference
 *    imports what the CAR holds. Each record's JSON and blob references are staged.
 * 4. A commit of the same tree, signed with the account's key here, at a revision after both the imported one and
 *    the account's current one, replaces the account's repository in one transaction (RepoImportStore.apply).
 *
 * Only a deactivated account imports (one created to move here, or deactivated to be moved again): the firehose
 * carries nothing of it until activateAccount announces the account and its repository (#account, #identity, #sync),
 * as the reference's import sequences nothing either. A refused or failed import changes nothing of the account and
 * leaves no staged rows behind.
 */
export class RepoImporter {
  constructor(
    private readonly deps: RepoImportDependencies,
    private readonly settings: RepoImportSettings,
  ) {}

  async import(did: string, car: AsyncIterable<Uint8Array>): Promise<ImportResult> {
    const { repo, imports, now } = this.deps;
    const [base, availability] = await Promise.all([repo.commitBase(did), repo.availability(did)]);
    if (!base || !availability) throw new RepoImportError(`Could not find an account for ${did}`);
    if (availability.deactivatedAt === null) throw notDeactivated();
    const importId = await imports.begin(did, now(), now() + this.settings.stagedForMs);
    try {
      const staged = await this.stage(importId, car);
      const commit = await this.verifiedCommit(did, staged.root, staged.rootBytes);
      const records = await this.stageTree(importId, commit.data.toString(), staged.blocks);
      const head = await this.commitHere(did, base, commit);
      const outcome = await imports.apply(importId, { did, base: base.head, head: head.head, commitBlock: head.block }, now());
      if (outcome === "active") throw notDeactivated();
      if (outcome === "no-account") throw new RepoImportError(`Could not find an account for ${did}`);
      if (outcome === "head-moved") throw new RepoImportError("Another import of this repository finished while this one was read: import again", { status: 409, xrpcName: "ImportConflict" });
      return { head: head.head, records };
    } finally {
      // The staged rows, whatever happened: those of an import applied are copies, and should this fail, the next
      // import's start removes them once expired (RepoImportStore.begin).
      await imports.discard(importId).catch(() => {});
    }
  }

  /** Reads the CAR into staged rows; its root and the root's block (the commit), and how many blocks it held. */
  private async stage(importId: string, car: AsyncIterable<Uint8Array>): Promise<{ root: string; rootBytes: Uint8Array; blocks: number }> {
    let reader: Awaited<ReturnType<typeof readCarStream>>;
    try {
      reader = await readCarStream(car);
    } catch (error) {
      throw carRefusal(error);
    }
    if (reader.roots.length !== 1) {
      await reader.blocks.dump().catch(() => {});
      throw new RepoImportError(`The CAR must have exactly one root (the repository's commit); it has ${reader.roots.length}`);
    }
    const root = reader.roots[0]!.toString();
    let rootBytes: Uint8Array | undefined;
    let batch: Array<{ cid: string; bytes: Uint8Array }> = [];
    let batchBytes = 0;
    let blocks = 0;
    try {
      for await (const block of reader.blocks) {
        const cid = block.cid.toString();
        if (cid === root) rootBytes = block.bytes;
        batch.push({ cid, bytes: block.bytes });
        batchBytes += block.bytes.byteLength;
        blocks += 1;
        if (batch.length >= STAGE_BLOCKS || batchBytes >= STAGE_BYTES) {
          await this.deps.imports.stageBlocks(importId, batch);
          batch = [];
          batchBytes = 0;
        }
      }
    } catch (error) {
      throw carRefusal(error);
    }
    await this.deps.imports.stageBlocks(importId, batch);
    if (!rootBytes) throw new RepoImportError(`The CAR does not hold its root block ${root}`);
    return { root, rootBytes, blocks };
  }

  /** The root as a version 3 commit of this DID, signed by a key the DID trusts. */
  private async verifiedCommit(did: string, root: string, bytes: Uint8Array): Promise<Commit> {
    let commit;
    try {
      commit = parseObjByDef(bytes, parseCid(root), def.versionedCommit).obj;
    } catch {
      throw new RepoImportError(`The CAR's root ${root} is not a repository commit`);
    }
    if (commit.version !== 3) throw new RepoImportError(`The repository's commit is version ${commit.version}: only version 3 commits can be imported`);
    if (commit.did !== did) throw new RepoImportError(`The repository is ${commit.did}'s, not this account's (${did})`);
    const keys = await this.deps.trustedKeys(did);
    for (const key of keys) {
      if (await verifyCommitSig(commit, key).catch(() => false)) return commit;
    }
    throw new RepoImportError(
      `The repository's commit is not signed by the key ${did}'s DID document names (${keys[0] ?? "none"}) nor by the account's key here: ` +
        "export it from the server the DID document still points to, before moving the identity",
    );
  }

  /** Walks the commit's tree from the staged blocks, staging its nodes and records; how many records it holds. */
  private async stageTree(importId: string, dataRoot: string, blocks: number): Promise<number> {
    const { imports } = this.deps;
    let records = 0;
    try {
      for await (const batch of walkMst(dataRoot, async (cids) => new Map((await imports.stagedBlocks(importId, cids)).map((row) => [row.cid, row.bytes])), { maxNodes: blocks })) {
        const staged = await this.recordsOf(importId, batch.leaves);
        await imports.stageTree(importId, batch.nodes, staged);
        records += staged.length;
      }
    } catch (error) {
      if (error instanceof MstError) throw new RepoImportError(`The repository's tree is not a valid MST: ${error.message}`);
      throw error;
    }
    return records;
  }

  /** Each leaf's record: its block from the staged ones, decoded, as JSON, with the blobs it names. */
  private async recordsOf(importId: string, leaves: readonly MstLeaf[]): Promise<StagedRecord[]> {
    const blocks = new Map((await this.deps.imports.stagedBlocks(importId, [...new Set(leaves.map((leaf) => leaf.cid))])).map((row) => [row.cid, row.bytes]));
    return leaves.map((leaf) => {
      const bytes = blocks.get(leaf.cid);
      if (!bytes) throw new RepoImportError(`The CAR does not hold the record ${leaf.key} (${leaf.cid})`);
      const { collection, rkey } = recordPath(leaf.key);
      let json;
      try {
        json = lexToJson(cborToLexRecord(bytes));
      } catch {
        throw new RepoImportError(`Could not parse record at '${leaf.key}'`);
      }
      return { collection, rkey, cid: leaf.cid, json: JSON.stringify(json), blobCids: blobCidsIn(json) };
    });
  }

  /**
   * The imported tree under a commit of this server's: signed with the account's key, at a revision after the
   * imported commit's and the account's current head's (a relay that saw either takes this one as newer).
   */
  private async commitHere(did: string, base: { head: RepoHead | undefined; signingKey: string }, imported: Commit): Promise<{ head: RepoHead; block: Uint8Array }> {
    const previous = [imported.rev, base.head?.rev].filter((rev): rev is string => rev !== undefined && TID.is(rev)).sort().at(-1);
    const rev = TID.nextStr(previous);
    const signed = await signCommit({ did, version: 3, rev, prev: null, data: imported.data }, await this.deps.signingKeypair(did, base.signingKey));
    const block = encode(signed as never);
    return { head: { cid: (await cidForCbor(block)).toString(), rev }, block };
  }
}

function notDeactivated(): RepoImportError {
  return new RepoImportError(
    "Only an account being moved here imports a repository: this one is active. Deactivate it first (com.atproto.server.deactivateAccount), import, then activate it",
  );
}

/** A CAR that could not be read: malformed, or a block whose CID does not match its bytes. The body's 413 passes. */
function carRefusal(error: unknown): unknown {
  if (isBodyTooLarge(error) || error instanceof AtriumError) return error;
  return new RepoImportError(`The CAR file could not be read: ${error instanceof Error ? error.message : String(error)}`);
}

/** The collection and record key of an MST key, which this server must be able to store and serve. */
function recordPath(key: string): { collection: string; rkey: string } {
  const { collection, rkey } = parseDataKey(key);
  if (!isNsid(collection) || !isRecordKey(rkey)) throw new RepoImportError(`The repository holds a record at '${key}', which is not a collection and record key`);
  // Collections are kept and looked up in their one canonical spelling (repo/identifiers.ts).
  if (canonicalNsid(collection) !== collection) throw new RepoImportError(`The repository's collection ${collection} is not in its canonical spelling (${canonicalNsid(collection)}), which this server keeps`);
  return { collection, rkey };
}
