/**
 * SIGKILL during a burst of writes (issue 18; docs/decisions/0027): four clients send createRecord and applyWrites
 * calls to one repository at once; after a number of acknowledged calls (a count, not a time) the server process is
 * killed with SIGKILL, mid-burst. Restarted on the same database: every acknowledged write is there with the CID it
 * was acknowledged with; the repository exported by getRepo verifies with @atproto/repo and loads; the head's rev is
 * the last event's; the sequencer holds exactly one #commit per commit of the chain, replayed from cursor=0 through
 * a real WebSocket and checked with sync v1.1's inductive check; and the rows hold exactly what the head reaches:
 * a call that was never answered is there only as a whole commit, or not at all.
 */
import { MemoryBlockstore, readCarWithRoot, Repo, verifyRepoCar } from "@atproto/repo";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import { commitsOf, verifyCommitChain } from "../helpers/commit-chain.ts";
import { rowsOf } from "../helpers/databases.ts";
import { FirehoseConsumer } from "../helpers/firehose-consumer.ts";
import { ALICE } from "../helpers/flow.ts";
import { startProcessServer, type ProcessServer } from "../helpers/process-server.ts";
import { createAccount, type TestServer } from "../helpers/test-server.ts";
import { call, callAnonymous, tokenWithScope, type ScopedToken } from "../helpers/xrpc.ts";
import { accountDidKey } from "../helpers/xrpc-extra.ts";

/** A collection this server has no lexicon for (records stored as "unknown"): the record keys here name writes, not TIDs; this file is about the repository, not about records checked against their lexicons (docs/decisions/0049). */
const NOTE = "com.example.note";
const CREATED = "2026-11-26T00:00:00.000Z";
const CLIENTS = 4;
/** Acknowledged calls after which the process is killed (the clients keep sending until the kill). */
const ACKNOWLEDGED_BEFORE_KILL = 40;
/** Records created by each applyWrites call: one commit must hold all of them or none. */
const BATCH = 3;

type Call = { paths: string[]; acknowledged?: { commit: string; cids: string[] }; failed?: string };

let server: ProcessServer;
let did: string;
let tokens: ScopedToken[];

beforeAll(async () => {
  server = await startProcessServer({ ATRIUM_RATE_LIMIT_XRPC_PER_MINUTE: "1000000" });
  // The helpers below need only the issuer and the database, which a process server has too.
  const asServer = server as unknown as TestServer;
  ({ did } = await createAccount(asServer, ALICE));
  tokens = [];
  for (let i = 0; i < CLIENTS; i++) tokens.push(await tokenWithScope(asServer, "atproto transition:generic"));
});
afterAll(() => server?.stop());

type WriteAnswer = { cid?: string; commit: { cid: string }; results?: Array<{ cid: string }> };

/** One call: a createRecord, or every third an applyWrites of BATCH creates. Returns what the server answered, if anything. */
async function send(token: ScopedToken, client: number, n: number): Promise<Call> {
  const rkey = (i: number) => `c${client}n${String(n).padStart(4, "0")}i${i}`;
  const batch = n % 3 === 2;
  const paths = batch ? Array.from({ length: BATCH }, (_, i) => `${NOTE}/${rkey(i)}`) : [`${NOTE}/${rkey(0)}`];
  const record = (i: number) => ({ text: `client ${client} call ${n} record ${i}`, createdAt: CREATED });
  try {
    const answer = batch
      ? await call<WriteAnswer>(token, "com.atproto.repo.applyWrites", {
          json: { repo: did, writes: paths.map((_, i) => ({ $type: "com.atproto.repo.applyWrites#create", collection: NOTE, rkey: rkey(i), value: record(i) })) },
        })
      : await call<WriteAnswer>(token, "com.atproto.repo.createRecord", { json: { repo: did, collection: NOTE, rkey: rkey(0), record: record(0) } });
    if (answer.status !== 200) return { paths, failed: `${answer.status} ${JSON.stringify(answer.body)}` };
    const cids = batch ? answer.body.results!.map((result) => result.cid) : [answer.body.cid!];
    return { paths, acknowledged: { commit: answer.body.commit.cid, cids } };
  } catch (error) {
    // The connection died with the process: this call was never answered.
    return { paths, failed: String((error as { cause?: { code?: string } }).cause?.code ?? error) };
  }
}

describe("SIGKILL during a burst of writes to one repository", () => {
  it("loses nothing acknowledged and leaves no half commit", async () => {
    const calls: Call[] = [];
    let acknowledged = 0;
    let killed = false;
    let reachedCount!: () => void;
    const enough = new Promise<void>((resolve) => (reachedCount = resolve));
    const client = async (index: number) => {
      for (let n = 0; !killed; n++) {
        const done = await send(tokens[index]!, index, n);
        calls.push(done);
        if (done.acknowledged && ++acknowledged >= ACKNOWLEDGED_BEFORE_KILL) reachedCount();
        if (done.failed && !killed) throw new Error(`a call failed before the kill: ${done.failed}`);
      }
    };
    const clients = Promise.all(Array.from({ length: CLIENTS }, (_, index) => client(index)));
    await Promise.race([enough, clients]);
    server.signal("SIGKILL");
    killed = true;
    const exit = await server.exited();
    await clients;
    expect(exit.signal).toBe("SIGKILL");
    // The burst was running at the kill: calls were in flight and were cut off.
    const unanswered = calls.filter((c) => c.failed);
    expect(unanswered.length).toBeGreaterThan(0);
    expect(acknowledged).toBeGreaterThanOrEqual(ACKNOWLEDGED_BEFORE_KILL);

    await server.restart();
    if (server.databasePath !== undefined) expect(server.db().pragma("integrity_check", { simple: true })).toBe("ok");
    const asServer = server as unknown as TestServer;
    const didKey = await accountDidKey(did);

    // The repository, exported and verified by the reference implementation, then loaded as another PDS would.
    const car = new Uint8Array(await (await fetch(`${server.issuer}/xrpc/com.atproto.sync.getRepo?did=${did}`)).arrayBuffer());
    const verified = await verifyRepoCar(car, did, didKey);
    const { root, blocks } = await readCarWithRoot(car);
    const repo = await Repo.load(new MemoryBlockstore(blocks), root);
    const inTree = new Map<string, string>(verified.creates.map((op) => [`${op.collection}/${op.rkey}`, op.cid.toString()]));

    // Every acknowledged write, with the CID it was acknowledged with.
    for (const done of calls.filter((c) => c.acknowledged)) {
      done.paths.forEach((path, i) => expect(inTree.get(path), path).toBe(done.acknowledged!.cids[i]));
    }
    // A call never answered is in the tree whole (all its records) or not at all; nothing else is.
    const attempted = new Set(calls.flatMap((c) => c.paths));
    for (const path of inTree.keys()) expect(attempted.has(path), path).toBe(true);
    const landedUnanswered = unanswered.filter((c) => c.paths.some((path) => inTree.has(path)));
    for (const c of unanswered) expect(c.paths.filter((path) => inTree.has(path)).length, c.paths.join(" ")).toBeOneOf([0, c.paths.length]);

    // The record rows are exactly the tree's leaves, and the blocks exactly what the head reaches: no orphan.
    const db = server.database();
    const rows = await rowsOf<{ collection: string; rkey: string; cid: string }>(db, sql`SELECT "collection", "rkey", "cid" FROM "Record" WHERE "did" = ${did}`);
    expect(new Map(rows.map((row) => [`${row.collection}/${row.rkey}`, row.cid]))).toEqual(inTree);
    const reachable = (await repo.data.allCids()).add(root);
    const stored = await rowsOf<{ cid: string }>(db, sql`SELECT "cid" FROM "RepoBlock" WHERE "did" = ${did}`);
    expect(stored.map((row) => row.cid).sort()).toEqual(reachable.toList().map((cid) => cid.toString()).sort());

    // The head is the last #commit's, and the log holds one #commit per commit of the chain, replayed from cursor=0.
    const head = (await callAnonymous<{ cid: string; rev: string }>(asServer, "com.atproto.sync.getLatestCommit", { params: { did } })).body;
    expect(head.cid).toBe(root.toString());
    const replay = new FirehoseConsumer(`${server.issuer.replace(/^http/, "ws")}/xrpc/com.atproto.sync.subscribeRepos?cursor=0`);
    await replay.until((frames) => commitsOf(frames, did).some((commit) => commit.commit.toString() === head.cid));
    replay.close();
    const commits = commitsOf(replay.frames, did);
    expect(commits.at(-1)!.rev).toBe(head.rev);
    const last = await verifyCommitChain(commits, did, didKey, { fromStart: true });
    expect(last?.rev).toBe(head.rev);
    expect(last?.data).toBe(repo.commit.data.toString());
    // The first, empty commit, then one per call that landed: the acknowledged ones and those that committed unanswered.
    const acknowledgedCommits = new Set(calls.flatMap((c) => (c.acknowledged ? [c.acknowledged.commit] : [])));
    expect(commits).toHaveLength(1 + acknowledgedCommits.size + landedUnanswered.length);
    for (const commit of acknowledgedCommits) expect(commits.filter((event) => event.commit.toString() === commit)).toHaveLength(1);
    expect(new Set(commits.map((event) => event.rev)).size).toBe(commits.length);
    // Each commit's ops are exactly one call's writes.
    for (const event of commits.slice(1)) {
      const paths = event.ops.map((op) => op.path).sort();
      expect(calls.some((c) => JSON.stringify([...c.paths].sort()) === JSON.stringify(paths)), paths.join(" ")).toBe(true);
    }
  });
});
