/**
 * The firehose of a started server, fed by real commits (docs/decisions/0027, 0029): a WebSocket consumer receives
 * every event of an account's creation and of every kind of write, and checks each #commit with the reference
 * implementation (@atproto/repo), never with Atrium's code: the commit's signature against the account's did:key, its
 * ops proven by the blocks it carries, and sync v1.1's inductive check (the ops, undone on the new tree, give back
 * prevData, and each commit's since is the previous rev).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commitsOf, verifyCommitChain } from "../helpers/commit-chain.ts";
import { FirehoseConsumer } from "../helpers/firehose-consumer.ts";
import { createAlice } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, callAnonymous } from "../helpers/xrpc.ts";
import { accountDidKey, scopedSession, type ScopedSession } from "../helpers/xrpc-extra.ts";

/** A collection this server has no lexicon for (records stored as "unknown"): the record keys here name writes, not TIDs; this file is about the repository, not about records checked against their lexicons (docs/decisions/0049). */
const NOTE = "com.example.note";
const CREATED = "2026-11-26T00:00:00.000Z";

let server: TestServer;
let consumer: FirehoseConsumer;
let alice: { did: string; handle: string };
let session: ScopedSession;

const firehose = (query = "") => `${server.issuer.replace(/^http/, "ws")}/xrpc/com.atproto.sync.subscribeRepos${query}`;
const write = (nsid: string, json: Record<string, unknown>) => call(session, `com.atproto.repo.${nsid}`, { json: { repo: alice.did, ...json } });
const post = (rkey: string, text: string) => write("createRecord", { collection: NOTE, rkey, record: { text, createdAt: CREATED } });

beforeAll(async () => {
  server = await startTestServer();
  // Live from before the account exists: its creation's events are the first this consumer sees.
  consumer = new FirehoseConsumer(firehose());
  await consumer.opened;
  alice = await createAlice(server);
  session = await scopedSession(server, "atproto transition:generic");
  await Promise.all(["p1", "p2", "p3", "p4", "p5"].map((rkey) => post(rkey, `post ${rkey}`)));
  await write("putRecord", { collection: NOTE, rkey: "p1", record: { text: "post p1, edited", createdAt: CREATED } });
  await write("applyWrites", {
    writes: [
      { $type: "com.atproto.repo.applyWrites#create", collection: NOTE, rkey: "p6", value: { text: "post p6", createdAt: CREATED } },
      { $type: "com.atproto.repo.applyWrites#update", collection: NOTE, rkey: "p2", value: { text: "post p2, edited", createdAt: CREATED } },
      { $type: "com.atproto.repo.applyWrites#delete", collection: NOTE, rkey: "p3" },
    ],
  });
  await write("deleteRecord", { collection: NOTE, rkey: "p4" });
  const head = (await callAnonymous<{ cid: string }>(server, "com.atproto.sync.getLatestCommit", { params: { did: alice.did } })).body.cid;
  await consumer.until((frames) => commitsOf(frames).some((commit) => commit.commit.toString() === head));
});
afterAll(async () => {
  consumer?.close();
  await server?.stop();
});

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
    const didKey = await accountDidKey(alice.did);
    const commits = commitsOf(consumer.frames, alice.did);
    // The first commit, five creates, the put, applyWrites and the delete: one commit per call, in sequence order.
    expect(commits).toHaveLength(9);
    await verifyCommitChain(commits, alice.did, didKey, { fromStart: true });
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
