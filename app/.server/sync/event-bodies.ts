import { encode } from "@atproto/lex-cbor";
import { parseCid, type Cid, type LexMap } from "@atproto/lex-data";
import { BlockMap, blocksToCarFile } from "@atproto/repo";

/**
 * The bodies of the events the sequencer logs, as the com.atproto.sync.subscribeRepos lexicon defines them
 * (sync v1.1), DAG-CBOR encoded without `seq` (app/.server/sync/event-log.ts: the firehose adds it when it frames
 * the event). Fields the lexicon marks deprecated but still requires are written with their fixed values:
 * `rebase: false`, `tooBig: false`, `blobs: []`.
 */

/** One operation of a #commit: `cid` null for a delete, `prev` (the record's previous CID) for updates and deletes. */
export type CommitEventOp = { action: "create" | "update" | "delete"; path: string; cid: string | null; prev?: string };

export type CommitEvent = {
  did: string;
  /** The new commit's CID and revision. */
  commit: string;
  rev: string;
  /** The previous commit's revision: null on a repository's first commit. */
  since: string | null;
  /** The previous commit's MST root (sync v1.1 `prevData`), absent on the first commit. */
  prevData?: string;
  /** The commit block, the new MST nodes and records, and the covering proof of every op. */
  blocks: BlockMap;
  ops: CommitEventOp[];
  time: string;
};

export async function commitEventBody(event: CommitEvent): Promise<Uint8Array> {
  const commit = parseCid(event.commit);
  const body: LexMap = {
    rebase: false,
    tooBig: false,
    repo: event.did,
    commit,
    rev: event.rev,
    since: event.since,
    blocks: await blocksToCarFile(commit, event.blocks),
    ops: event.ops.map(opOf),
    blobs: [],
    time: event.time,
  };
  if (event.prevData !== undefined) body.prevData = parseCid(event.prevData);
  return encode(body);
}

function opOf(op: CommitEventOp): LexMap {
  const out: LexMap = { action: op.action, path: op.path, cid: op.cid === null ? null : parseCid(op.cid) };
  if (op.prev !== undefined) out.prev = parseCid(op.prev);
  return out;
}

/** #sync: "the current state of the repo", a CAR holding only the signed commit block (sync v1.1). */
export async function syncEventBody(event: { did: string; commit: Cid; commitBlock: Uint8Array; rev: string; time: string }): Promise<Uint8Array> {
  const blocks = await blocksToCarFile(event.commit, new BlockMap([[event.commit, event.commitBlock]]));
  return encode({ did: event.did, blocks, rev: event.rev, time: event.time });
}

/** #identity: the account's handle (or DID document) may have changed; consumers re-resolve. */
export function identityEventBody(event: { did: string; handle?: string; time: string }): Uint8Array {
  return encode(event.handle === undefined ? { did: event.did, time: event.time } : { did: event.did, time: event.time, handle: event.handle });
}

/** #account: whether the account is active at this host (`status` says why not). */
export function accountEventBody(event: { did: string; active: boolean; status?: string; time: string }): Uint8Array {
  const body: LexMap = { did: event.did, time: event.time, active: event.active };
  if (event.status !== undefined) body.status = event.status;
  return encode(body);
}
