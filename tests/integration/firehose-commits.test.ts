/**
 * The firehose of a started server, fed by real commits (docs/decisions/0027, 0029): a WebSocket consumer receives
 * every event of an account's creation and of every kind of write, and checks each #commit with the reference
 * implementation (@atproto/repo), never with Atrium's code: the commit's signature against the account's did:key, its
 * ops proven by the blocks it carries, and sync v1.1's inductive check (the ops, undone on the new tree, give back
 * prevData, and each commit's since is the previous rev).
 */
import { P256Keypair } from "@atproto/crypto";
import { parseCid } from "@atproto/lex-data";
import { def, MemoryBlockstore, MST, readCar, verifyCommitSig } from "@atproto/repo";
import type { CID } from "multiformats/cid";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FirehoseConsumer } from "../helpers/firehose-consumer.ts";
import { createAlice } from "../helpers/flow.ts";
import type { Frame } from "../helpers/subscribe-repos-lexicon.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, callAnonymous } from "../helpers/xrpc.ts";
import { accountSigningJwk, scopedSession, type ScopedSession } from "../helpers/xrpc-extra.ts";

const POST = "app.bsky.feed.post";
const CREATED = "2026-11-26T00:00:00.000Z";

type CommitOp = { action: "create" | "update" | "delete"; path: string; cid: CID | null; prev?: CID };
type CommitBody = { seq: number; repo: string; commit: CID; rev: string; since: string | null; blocks: Uint8Array; ops: CommitOp[]; prevData?: CID };

let server: TestServer;
let consumer: FirehoseConsumer;
let alice: { did: string; handle: string };
let session: ScopedSession;

const firehose = (query = "") => `${server.issuer.replace(/^http/, "ws")}/xrpc/com.atproto.sync.subscribeRepos${query}`;
const write = (nsid: string, json: Record<string, unknown>) => call(session, `com.atproto.repo.${nsid}`, { json: { repo: alice.did, ...json } });
const post = (rkey: string, text: string) => write("createRecord", { collection: POST, rkey, record: { text, createdAt: CREATED } });

beforeAll(async () => {
  server = await startTestServer();
  // Live from before the account exists: its creation's events are the first this consumer sees.
  consumer = new FirehoseConsumer(firehose());
  await consumer.opened;
  alice = await createAlice(server);
  session = await scopedSession(server, "atproto transition:generic");
  await Promise.all(["p1", "p2", "p3", "p4", "p5"].map((rkey) => post(rkey, `post ${rkey}`)));
  await write("putRecord", { collection: POST, rkey: "p1", record: { text: "post p1, edited", createdAt: CREATED } });
  await write("applyWrites", {
    writes: [
      { $type: "com.atproto.repo.applyWrites#create", collection: POST, rkey: "p6", value: { text: "post p6", createdAt: CREATED } },
      { $type: "com.atproto.repo.applyWrites#update", collection: POST, rkey: "p2", value: { text: "post p2, edited", createdAt: CREATED } },
      { $type: "com.atproto.repo.applyWrites#delete", collection: POST, rkey: "p3" },
    ],
  });
  await write("deleteRecord", { collection: POST, rkey: "p4" });
  const head = (await callAnonymous<{ cid: string }>(server, "com.atproto.sync.getLatestCommit", { params: { did: alice.did } })).body.cid;
  await consumer.until((frames) => commitsOf(frames).some((commit) => commit.commit.toString() === head));
});
afterAll(async () => {
  consumer?.close();
  await server?.stop();
});

function commitsOf(frames: Frame[]): CommitBody[] {
  return frames.flatMap((frame) => (frame.kind === "message" && frame.type === "#commit" ? [frame.body as unknown as CommitBody] : []));
}

/** The commit block's data root, the commit verified against the did:key, and the tree the event's blocks hold. */
async function openCommit(event: CommitBody, didKey: string) {
  const { blocks } = await readCar(event.blocks);
  const storage = new MemoryBlockstore(blocks);
  const commit = await storage.readObj(parseCid(event.commit.toString()), def.commit);
  expect(commit.did).toBe(alice.did);
  expect(commit.rev).toBe(event.rev);
  expect(await verifyCommitSig(commit, didKey)).toBe(true);
  return { commit, tree: await MST.load(storage, commit.data) };
}

describe("the firehose, fed by real commits", () => {
  it("announces the account (#identity, #account active) before its first, empty commit", () => {
    const ofAlice = consumer.frames.filter((frame) => frame.kind === "message" && frame.body.did === alice.did || (frame.kind === "message" && frame.body.repo === alice.did));
    const types = ofAlice.map((frame) => (frame.kind === "message" ? frame.type : frame.error));
    expect(types.slice(0, 3)).toEqual(["#identity", "#account", "#commit"]);
    const [identity, account, first] = ofAlice.map((frame) => (frame.kind === "message" ? frame.body : {}));
    expect(identity).toMatchObject({ did: alice.did, handle: alice.handle });
    expect(account).toMatchObject({ did: alice.did, active: true });
    expect(first).toMatchObject({ since: null, ops: [] });
  });

  it("every #commit is signed by the account's key, proves its ops, and undoing them on its tree gives back prevData", async () => {
    const { d } = await accountSigningJwk(server, alice.did);
    const didKey = (await P256Keypair.import(Buffer.from(d!, "base64url"))).did();
    const commits = commitsOf(consumer.frames).filter((event) => event.repo === alice.did);
    // The first commit, five creates, the put, applyWrites and the delete: one commit per call, in sequence order.
    expect(commits).toHaveLength(9);
    expect(commits.map((event) => event.seq)).toEqual([...commits.map((event) => event.seq)].sort((a, b) => a - b));
    let previous: { rev: string; data: string } | undefined;
    for (const event of commits) {
      const { commit, tree } = await openCommit(event, didKey);
      for (const op of event.ops) {
        // The blocks prove each op: a create or update leads to its record's CID, a delete to nothing.
        expect((await tree.get(op.path))?.toString() ?? null).toBe(op.cid?.toString() ?? null);
      }
      if (previous) {
        expect(event.since).toBe(previous.rev);
        expect(event.prevData?.toString()).toBe(previous.data);
        // sync v1.1: the ops, undone on the new tree (with only the blocks the event carries), give the previous data root.
        let undone = tree;
        for (const op of event.ops) {
          if (op.action === "create") undone = await undone.delete(op.path);
          else if (op.action === "update") undone = await undone.update(op.path, parseCid(op.prev!.toString()));
          else undone = await undone.add(op.path, parseCid(op.prev!.toString()));
        }
        expect((await undone.getPointer()).toString()).toBe(previous.data);
      }
      previous = { rev: commit.rev, data: commit.data.toString() };
    }
    const actions = commits.flatMap((event) => event.ops.map((op) => `${op.action} ${op.path.split("/")[1]}`));
    expect(actions).toEqual(expect.arrayContaining(["update p1", "create p6", "update p2", "delete p3", "delete p4"]));
    expect(commits.at(-2)!.ops).toHaveLength(3);
  });

  it("cursor=0 replays the same events, in the same order, with the same bytes", async () => {
    const replay = new FirehoseConsumer(firehose("?cursor=0"));
    const last = Math.max(...consumer.seqs());
    await replay.untilSeq(last);
    replay.close();
    const live = consumer.frames.filter((frame) => frame.kind === "message" && typeof frame.body.seq === "number");
    const replayed = replay.frames.filter((frame) => frame.kind === "message" && typeof frame.body.seq === "number" && (frame.body.seq as number) <= last);
    expect(replay.seqs()[0]).toBe(1);
    expect(JSON.stringify(replayed.slice(-live.length))).toBe(JSON.stringify(live));
  });
});
