/**
 * getRepo and getRecord while two server processes write to the same repository (docs/decisions/0027, amendment):
 * every export is one commit's repository, which @atproto/repo verifies whole (getRepo) or as a diff on an earlier
 * export (getRepo with `since`); every record proof verifies and proves the version that was acknowledged. Each
 * commit removes the blocks its new head no longer reaches, so an export read across commits would miss some.
 * The readers and the writers stop on counts, never on time: the writers go on until the readers are done.
 */
import { parseCid } from "@atproto/lex-data";
import { MemoryBlockstore, readCarWithRoot, Repo, verifyDiffCar, verifyProofs, verifyRecords, verifyRepoCar } from "@atproto/repo";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAlice } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, tokenWithScope, type ScopedToken } from "../helpers/xrpc.ts";
import { accountDidKey } from "../helpers/xrpc-extra.ts";

/** A collection this server has no lexicon for (records stored as "unknown"): the record keys here name writes, not TIDs; this file is about the repository, not about records checked against their lexicons (docs/decisions/0049). */
const NOTE = "com.example.note";
const CREATED = "2026-11-26T00:00:00.000Z";
/** Exports and proofs each reader takes, all while the writers write. */
const EXPORTS = 12;
const PROOFS = 24;
/** Records written before, FILL_CALLS times (applyWrites' largest call): some 1,300 blocks, three reads of 500. */
const FILL = 200;
const FILL_CALLS = 5;

let first: TestServer;
let second: TestServer;
let alice: { did: string };
let didKey: string;
let writers: ScopedToken[];

/**
 * The writers write for as long as the readers read, which a busy machine makes long: past the account's write budget
 * (docs/decisions/0045), which is not what this test is about.
 */
const UNBOUNDED_WRITES = { ATRIUM_WRITE_POINTS_PER_HOUR: "100000000", ATRIUM_WRITE_POINTS_PER_DAY: "100000000" };

beforeAll(async () => {
  first = await startTestServer(UNBOUNDED_WRITES);
  second = await startTestServer({ ...UNBOUNDED_WRITES, DATABASE_URL: first.databaseUrl });
  alice = await createAlice(first);
  writers = [await tokenWithScope(first, "atproto transition:generic"), await tokenWithScope(second, "atproto transition:generic")];
  didKey = await accountDidKey(alice.did);
});
afterAll(async () => {
  await second?.stop();
  await first?.stop();
});

type Written = { cid: string; commit: { cid: string; rev: string } };

async function bytes(server: TestServer, nsid: string, params: Record<string, string>): Promise<Uint8Array> {
  const response = await fetch(`${server.issuer}/xrpc/${nsid}?${new URLSearchParams(params)}`);
  expect(response.status).toBe(200);
  return new Uint8Array(await response.arrayBuffer());
}

/** Creates, updates and deletes in turn through one process, until `done()`; the records it never changed after creating them. */
async function writeUntil(token: ScopedToken, name: string, done: () => boolean): Promise<Map<string, string>> {
  const kept = new Map<string, string>();
  const write = async (nsid: string, json: Record<string, unknown>) => {
    const result = await call<Written>(token, `com.atproto.repo.${nsid}`, { json: { repo: alice.did, collection: NOTE, ...json } });
    expect(result.status).toBe(200);
    return result.body;
  };
  for (let i = 0; !done() || i < 6; i++) {
    const rkey = `${name}${String(i).padStart(4, "0")}`;
    const created = await write("createRecord", { rkey, record: { text: `${name} ${i}`, createdAt: CREATED } });
    if (i % 3 === 1) await write("putRecord", { rkey, record: { text: `${name} ${i}, edited`, createdAt: CREATED } });
    else if (i % 3 === 2) await write("deleteRecord", { rkey });
    else kept.set(rkey, created.cid);
  }
  return kept;
}

describe("exports of a repository being written by two processes", () => {
  it("every getRepo (whole and since a revision) and every getRecord proof verifies with @atproto/repo", async () => {
    // More blocks than one read of 500 would return: an export read in pages across commits could miss one.
    for (let batch = 0; batch < FILL_CALLS; batch++) {
      const writes = Array.from({ length: FILL }, (_, i) => ({ $type: "com.atproto.repo.applyWrites#create", collection: NOTE, rkey: `fill${batch}${String(i).padStart(3, "0")}`, value: { text: `fill ${i}`, createdAt: CREATED } }));
      expect((await call(writers[0]!, "com.atproto.repo.applyWrites", { json: { repo: alice.did, writes } })).status).toBe(200);
    }
    // The base for the `since` exports: an export taken before the writes, imported as another PDS would.
    const base = await verifyRepoCar(await bytes(first, "com.atproto.sync.getRepo", { did: alice.did }), alice.did, didKey);
    const baseCar = await readCarWithRoot(await bytes(first, "com.atproto.sync.getRepo", { did: alice.did }));
    const baseRepo = await Repo.load(new MemoryBlockstore(baseCar.blocks), baseCar.root);

    let readersDone = false;
    const writing = Promise.all([writeUntil(writers[0]!, "one", () => readersDone), writeUntil(writers[1]!, "two", () => readersDone)]);
    let whole = 0;
    let diffs = 0;
    let proofs = 0;
    const heads = new Set<string>();
    const reading = (async () => {
      for (let i = 0; i < EXPORTS; i++) {
        const server = i % 2 === 0 ? first : second;
        const verified = await verifyRepoCar(await bytes(server, "com.atproto.sync.getRepo", { did: alice.did }), alice.did, didKey);
        heads.add(verified.commit.cid.toString());
        whole++;
        const diff = await verifyDiffCar(baseRepo, await bytes(server, "com.atproto.sync.getRepo", { did: alice.did, since: base.commit.rev }), alice.did, didKey);
        expect(diff.commit.rev >= base.commit.rev).toBe(true);
        diffs++;
      }
    })();
    const proving = (async () => {
      for (let i = 0; i < PROOFS; i++) {
        const server = i % 2 === 0 ? second : first;
        // A record of either writer that may or may not exist yet: a proof of presence or of absence, either way verified.
        const rkey = `${i % 2 === 0 ? "one" : "two"}${String(i).padStart(4, "0")}`;
        const car = await bytes(server, "com.atproto.sync.getRecord", { did: alice.did, collection: NOTE, rkey });
        const claims = await verifyRecords(car, alice.did, didKey);
        expect(claims.every((claim) => claim.rkey === rkey)).toBe(true);
        proofs++;
      }
    })();
    // The writers stop when the readers are done, whether they passed or failed.
    const read = await Promise.allSettled([reading, proving]);
    readersDone = true;
    const kept = await writing;
    for (const outcome of read) if (outcome.status === "rejected") throw outcome.reason;

    expect({ whole, diffs, proofs }).toEqual({ whole: EXPORTS, diffs: EXPORTS, proofs: PROOFS });
    // The exports were taken while the head moved, not all of one quiet repository.
    expect(heads.size).toBeGreaterThan(1);

    // Once the writes are over, every record a writer created and never changed is proven at the CID it was acknowledged with.
    for (const [rkey, cid] of [...kept[0], ...kept[1]]) {
      const proof = await bytes(second, "com.atproto.sync.getRecord", { did: alice.did, collection: NOTE, rkey });
      const { unverified } = await verifyProofs(proof, [{ collection: NOTE, rkey, cid: parseCid(cid) }], alice.did, didKey);
      expect(unverified).toEqual([]);
    }
  });
});
