import { CarWriter } from "@ipld/car";
import { encode, type LexValue } from "@atproto/lex-cbor";
import type { CID } from "multiformats/cid";
import type { NewEvent } from "../../app/.server/sync/event-log.ts";
import { encodeBlock, type Block } from "./lexicon-car.ts";

/**
 * Event bodies as the repository writes them into the log (subscribeRepos
 * lexicon, sync v1.1; without `seq`), built from real DAG-CBOR blocks in a
 * real CAR, for the firehose's tests.
 */

async function carOf(root: CID, blocks: Block[]): Promise<Uint8Array> {
  const { writer, out } = CarWriter.create([root]);
  const chunks: Uint8Array[] = [];
  const collected = (async () => {
    for await (const chunk of out) chunks.push(chunk);
  })();
  for (const block of blocks) await writer.put(block);
  await writer.close();
  await collected;
  return Buffer.concat(chunks);
}

/** A TID-shaped revision for the n-th commit (13 base32-sortable characters). */
export function revOf(n: number): string {
  const alphabet = "234567abcdefghijklmnopqrstuvwxyz";
  let text = "";
  let value = n + 2 ** 40;
  for (let i = 0; i < 13; i++) {
    text = alphabet[value % 32] + text;
    value = Math.floor(value / 32);
  }
  return `3${text.slice(1)}`;
}

/**
 * A #commit creating one record (n-th commit of `did`; the first has `since: null` and no `prevData`).
 * `padding` adds bytes to the record, for tests about sizes.
 */
export async function commitEvent(did: string, n: number, padding = 0): Promise<NewEvent> {
  const record = await encodeBlock({ $type: "app.bsky.feed.post", text: `post ${n}`, createdAt: new Date(0).toISOString(), padding: "x".repeat(padding) });
  const data = await encodeBlock({ l: null, e: [] });
  const commit = await encodeBlock({ did, version: 3, data: data.cid, rev: revOf(n), prev: null, sig: new Uint8Array(64) });
  const previousData = n > 1 ? await encodeBlock({ l: null, e: [], n }) : undefined;
  const body = {
    rebase: false,
    tooBig: false,
    repo: did,
    commit: commit.cid,
    rev: revOf(n),
    since: n > 1 ? revOf(n - 1) : null,
    blocks: await carOf(commit.cid, [commit, data, record]),
    ops: [{ action: "create", path: `app.bsky.feed.post/${revOf(n)}`, cid: record.cid }],
    blobs: [],
    ...(previousData ? { prevData: previousData.cid } : {}),
    time: new Date().toISOString(),
  };
  return { did, type: "commit", body: encode(body as LexValue) };
}

export function identityEvent(did: string, handle: string): NewEvent {
  return { did, type: "identity", body: encode({ did, handle, time: new Date().toISOString() }) };
}

export function accountEvent(did: string, active: boolean, status?: string): NewEvent {
  return { did, type: "account", body: encode({ did, active, ...(status ? { status } : {}), time: new Date().toISOString() }) };
}

export async function syncEvent(did: string, n: number): Promise<NewEvent> {
  const data = await encodeBlock({ l: null, e: [] });
  const commit = await encodeBlock({ did, version: 3, data: data.cid, rev: revOf(n), prev: null, sig: new Uint8Array(64) });
  return { did, type: "sync", body: encode({ did, rev: revOf(n), blocks: await carOf(commit.cid, [commit]), time: new Date().toISOString() }) };
}
