import { parseCid } from "@atproto/lex-data";
import { blocksToCarFile, BlockMap, concatBytesAsync, getRecords, MemoryBlockstore, writeCarStream, type CarBlock } from "@atproto/repo";
import { AtriumError } from "../errors/atrium-error.ts";
import type { BlockRow, RepoHead, RepoStore } from "../repo/repo-store.ts";
import { accountStateOf, type AccountState } from "../accounts/account-status.ts";

/**
 * What com.atproto.sync.* serves from the repositories: CAR files that @atproto/repo (or any atproto
 * implementation) verifies on its own: the whole repository, a record's proof, blocks by CID (docs/decisions/0027).
 */

/** How often a record's proof is built again on a new head (a concurrent commit removed a block of the old one) before it is built from a snapshot. */
const PROOF_ATTEMPTS = 3;

export class SyncError extends AtriumError {
  constructor(name: string, message: string, status = 400) {
    super(name, message, { status, xrpcName: name });
  }
}

/**
 * Who asks for a repository's data: the network (anyone), or the account's own owner or the operator, who are served
 * it while the account is deactivated or taken down, as the reference PDS serves them (its isUserOrAdmin), so that a
 * taken-down person can still export their data (docs/decisions/0051).
 */
export type SyncReader = "public" | "owner-or-admin";

/**
 * The repository's head, or the lexicons' error: RepoNotFound for an unknown DID (or an account without a repository
 * yet), RepoTakendown while the operator has taken it down, RepoDeactivated while its account is deactivated
 * (docs/decisions/0031, 0051; getRepo, getRecord, getLatestCommit, getBlocks, getBlob and listBlobs all list them).
 * The owner and the operator are told the head whatever the state (`reader`).
 */
export async function headOf(store: RepoStore, did: string, reader: SyncReader = "public"): Promise<RepoHead> {
  const availability = await store.availability(did);
  const head = availability?.head;
  refuseUnavailable(did, head, availability ? accountStateOf(availability) : "active", reader);
  return head;
}

function refuseUnavailable(did: string, head: RepoHead | undefined, state: AccountState, reader: SyncReader): asserts head is RepoHead {
  if (!head) throw new SyncError("RepoNotFound", `Could not find repo for DID: ${did}`);
  if (reader === "owner-or-admin") return;
  // The reference's wording, ranked as its assertRepoAvailability ranks them.
  if (state === "takendown") throw new SyncError("RepoTakendown", `Repo has been takendown: ${did}`);
  if (state === "deactivated") throw new SyncError("RepoDeactivated", `Repo has been deactivated: ${did}`);
}

/**
 * com.atproto.sync.getRepo: "Download a repository export as CAR file", rooted at the head; with `since`, only the
 * blocks added after that revision ("Optionally only a 'diff' since a previous revision"). The head and the blocks
 * are read on one snapshot of the database, so the CAR is one commit's repository even while others commit: a
 * commit removes the blocks its new head no longer reaches, and pages read across commits could miss one
 * (docs/decisions/0027, amendment). The snapshot is read at once and streamed from memory: no database connection
 * or read transaction waits on a slow client.
 */
export async function repositoryCar(store: RepoStore, did: string, since?: string, reader: SyncReader = "public"): Promise<AsyncIterable<Uint8Array>> {
  const snapshot = await store.repositorySnapshot(did, { since, evenIfUnavailable: reader === "owner-or-admin" });
  // RepoNotFound, RepoTakendown or RepoDeactivated, as every other method that serves the repository's data answers.
  refuseUnavailable(did, snapshot?.head, snapshot?.state ?? "active", reader);
  return writeCarStream(parseCid(snapshot.head.cid), carBlocks(snapshot.blocks));
}

async function* carBlocks(blocks: BlockRow[]): AsyncGenerator<CarBlock> {
  // Each block is let go once written, so the export's memory shrinks as the client reads.
  for (let i = 0; i < blocks.length; i++) {
    const block = blocks[i]!;
    blocks[i] = EMPTY_BLOCK;
    yield { cid: parseCid(block.cid), bytes: block.bytes };
  }
}

const EMPTY_BLOCK: BlockRow = { cid: "", bytes: new Uint8Array(0) };

/**
 * com.atproto.sync.getRecord: the commit, the MST nodes from the root to the record's key, and the record: proof of
 * its presence, or of its absence when there is none (as the reference PDS answers, 200 with the proof). The proof is
 * read block by block from the head; a commit landing in between may remove a block of that head, and the proof is
 * then built again on the new head. When commits keep landing (PROOF_ATTEMPTS times), it is built from one snapshot of
 * the whole repository instead, which no commit can move: dearer, but it always answers (docs/decisions/0027,
 * amendment).
 */
export async function recordProofCar(store: RepoStore, did: string, collection: string, rkey: string): Promise<Uint8Array> {
  const wanted = [{ collection, rkey }];
  for (let attempt = 1; attempt <= PROOF_ATTEMPTS; attempt++) {
    const head = await headOf(store, did);
    try {
      return await concatBytesAsync(getRecords(store.blockstore(did), parseCid(head.cid), wanted));
    } catch (error) {
      if ((await store.head(did))?.cid === head.cid) throw error;
    }
  }
  const snapshot = await store.repositorySnapshot(did, {});
  refuseUnavailable(did, snapshot?.head, snapshot?.state ?? "active", "public");
  const blocks = new BlockMap();
  for (const block of snapshot.blocks) blocks.set(parseCid(block.cid), block.bytes);
  return concatBytesAsync(getRecords(new MemoryBlockstore(blocks), parseCid(snapshot.head.cid), wanted));
}

/** com.atproto.sync.getBlocks: the blocks named, from this repository only; BlockNotFound names any missing. */
export async function blocksCar(store: RepoStore, did: string, cids: readonly string[]): Promise<Uint8Array> {
  await headOf(store, did);
  const found = await store.getBlocks(did, cids);
  const missing = cids.filter((cid) => !found.some((block) => block.cid === cid));
  if (missing.length > 0) throw new SyncError("BlockNotFound", `Could not find blocks: ${missing.join(", ")}`);
  const blocks = new BlockMap();
  for (const block of found) blocks.set(parseCid(block.cid), block.bytes);
  return blocksToCarFile(null, blocks);
}
