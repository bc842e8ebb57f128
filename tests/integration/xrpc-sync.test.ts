/**
 * com.atproto.sync.* against a started server (docs/decisions/0027), every answer checked with the reference
 * implementation's own verification (@atproto/repo, @atproto/crypto), never with Atrium's code: a repository exported
 * with getRepo is what another PDS's import would accept (issue 18 item 7, "Leaving is possible").
 */
import { parseCid } from "@atproto/lex-data";
import { MemoryBlockstore, readCar, readCarWithRoot, Repo, verifyProofs, verifyRecords, verifyRepoCar } from "@atproto/repo";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAlice } from "../helpers/flow.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, callAnonymous, expectXrpcError } from "../helpers/xrpc.ts";
import { accountDidKey, SAMPLES, scopedSession, uploadBlob, type ScopedSession } from "../helpers/xrpc-extra.ts";

/** A collection this server has no lexicon for (records stored as "unknown"): the record keys here name writes, not TIDs; this file is about the repository, not about records checked against their lexicons (docs/decisions/0049). */
const NOTE = "com.example.note";
type WriteResult = { uri: string; cid: string; commit: { cid: string; rev: string } };

let server: TestServer;
let alice: { did: string; handle: string };
let didKey: string;
let session: ScopedSession;

beforeAll(async () => {
  server = await startTestServer();
  alice = await createAlice(server);
  session = await scopedSession(server, "atproto transition:generic");
  // The did:key the account's DID document names (#atproto), as the PLC directory serves it.
  didKey = await accountDidKey(alice.did);
});
afterAll(() => server?.stop());

const write = (nsid: string, json: Record<string, unknown>) => call<WriteResult>(session, `com.atproto.repo.${nsid}`, { json: { repo: alice.did, ...json } });
const post = (rkey: string, text: string, extra: Record<string, unknown> = {}) => write("createRecord", { collection: NOTE, rkey, record: { text, createdAt: "2026-11-26T00:00:00.000Z", ...extra } });

async function bytesOf(nsid: string, params: Record<string, string | string[]>): Promise<{ status: number; type: string | null; bytes: Uint8Array }> {
  const url = new URL(`${server.issuer}/xrpc/${nsid}`);
  for (const [name, value] of Object.entries(params)) for (const item of [value].flat()) url.searchParams.append(name, item);
  const response = await fetch(url);
  return { status: response.status, type: response.headers.get("content-type"), bytes: new Uint8Array(await response.arrayBuffer()) };
}

const latest = async () => (await callAnonymous<{ cid: string; rev: string }>(server, "com.atproto.sync.getLatestCommit", { params: { did: alice.did } })).body;

describe("com.atproto.sync", () => {
  it("getRepo: the whole repository as a CAR that @atproto/repo verifies and imports with the account's did:key", async () => {
    const first = await post("a1", "first");
    await post("a2", "second", { reply: null, tags: ["x"] });
    await write("putRecord", { collection: NOTE, rkey: "a1", record: { text: "first, edited", createdAt: "2026-11-26T00:00:00.000Z" } });
    await write("applyWrites", {
      writes: [
        { $type: "com.atproto.repo.applyWrites#create", collection: NOTE, rkey: "a3", value: { text: "third", createdAt: "2026-11-26T00:00:00.000Z" } },
        { $type: "com.atproto.repo.applyWrites#delete", collection: NOTE, rkey: "a2" },
      ],
    });
    expect(first.status).toBe(200);
    const car = await bytesOf("com.atproto.sync.getRepo", { did: alice.did });
    expect(car.status).toBe(200);
    expect(car.type).toBe("application/vnd.ipld.car");
    const verified = await verifyRepoCar(car.bytes, alice.did, didKey);
    expect(verified.creates.map((op) => op.rkey).sort()).toEqual(["a1", "a3"]);
    expect(verified.commit.cid.toString()).toBe((await latest()).cid);
    // Another PDS's import: the blocks into its storage, the repository loaded from the commit, the records read back.
    const { root, blocks } = await readCarWithRoot(car.bytes);
    const storage = new MemoryBlockstore(blocks);
    const imported = await Repo.load(storage, root);
    expect(imported.did).toBe(alice.did);
    expect(await imported.getRecord(NOTE, "a1")).toMatchObject({ text: "first, edited" });
    expect(await imported.getRecord(NOTE, "a2")).toBeNull();
    const listed = await callAnonymous<{ records: Array<{ uri: string; cid: string }> }>(server, "com.atproto.repo.listRecords", { params: { repo: alice.did, collection: NOTE } });
    expect(listed.body.records.map((record) => [record.uri.split("/").pop(), record.cid]).sort()).toEqual(verified.creates.map((op) => [op.rkey, op.cid.toString()]).sort());
  });

  it("getRepo with since: only the blocks written after that revision, rooted at the head", async () => {
    const before = await latest();
    const added = await post("s1", "since");
    const diff = await readCarWithRoot((await bytesOf("com.atproto.sync.getRepo", { did: alice.did, since: before.rev })).bytes);
    const whole = await readCarWithRoot((await bytesOf("com.atproto.sync.getRepo", { did: alice.did })).bytes);
    expect(diff.root.toString()).toBe(added.body.commit.cid);
    expect(diff.blocks.has(parseCid(added.body.cid))).toBe(true);
    expect(diff.blocks.size).toBeLessThan(whole.blocks.size);
  });

  it("getRecord: a CAR proving the record, and for a deleted or absent one a CAR proving its absence (200)", async () => {
    const created = await post("r1", "proved");
    const present = await bytesOf("com.atproto.sync.getRecord", { did: alice.did, collection: NOTE, rkey: "r1" });
    expect(present.status).toBe(200);
    const records = await verifyRecords(present.bytes, alice.did, didKey);
    expect(records.map((record) => [record.rkey, record.record?.text])).toEqual([["r1", "proved"]]);
    await write("deleteRecord", { collection: NOTE, rkey: "r1" });
    for (const rkey of ["r1", "never-written"]) {
      const absent = await bytesOf("com.atproto.sync.getRecord", { did: alice.did, collection: NOTE, rkey });
      expect(absent.status).toBe(200);
      const { verified, unverified } = await verifyProofs(absent.bytes, [{ collection: NOTE, rkey, cid: null }], alice.did, didKey);
      expect({ verified: verified.length, unverified: unverified.length }).toEqual({ verified: 1, unverified: 0 });
    }
    const stale = await verifyProofs((await bytesOf("com.atproto.sync.getRecord", { did: alice.did, collection: NOTE, rkey: "r1" })).bytes, [{ collection: NOTE, rkey: "r1", cid: parseCid(created.body.cid) }], alice.did, didKey);
    expect(stale.verified).toEqual([]);
  });

  it("getLatestCommit, getRepoStatus and listRepos name the head the writes answered", async () => {
    const written = await post("h1", "head");
    expect(await latest()).toEqual(written.body.commit);
    const status = await callAnonymous(server, "com.atproto.sync.getRepoStatus", { params: { did: alice.did } });
    expect(status.body).toEqual({ did: alice.did, active: true, rev: written.body.commit.rev });
    const repos = await callAnonymous<{ repos: unknown[] }>(server, "com.atproto.sync.listRepos");
    expect(repos.body.repos).toContainEqual({ did: alice.did, head: written.body.commit.cid, rev: written.body.commit.rev, active: true });
  });

  it("getBlocks: the blocks asked for, verified by their CIDs; BlockNotFound for one the repository does not hold", async () => {
    const written = await post("b1", "block");
    const car = await bytesOf("com.atproto.sync.getBlocks", { did: alice.did, cids: [written.body.cid, written.body.commit.cid] });
    expect(car.status).toBe(200);
    // readCarWithRoot checks every block against its CID; getBlocks' CAR has no root, so read it as such.
    const { blocks } = await readCar(car.bytes);
    expect(blocks.size).toBe(2);
    const missing = await callAnonymous(server, "com.atproto.sync.getBlocks", { params: { did: alice.did, cids: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm" } });
    expectXrpcError(missing, 400, "BlockNotFound");
  });

  it("getBlob and listBlobs: a blob a record references, with its media type", async () => {
    const upload = await uploadBlob<{ blob: { ref: { $link: string } } }>(session, SAMPLES.png, "image/png");
    const cid = upload.body.blob.ref.$link;
    const before = await latest();
    await post("img", "picture", { embed: { $type: "app.bsky.embed.images", images: [{ alt: "", image: { $type: "blob", ref: { $link: cid }, mimeType: "image/png", size: SAMPLES.png.byteLength } }] } });
    const blob = await bytesOf("com.atproto.sync.getBlob", { did: alice.did, cid });
    expect(blob.status).toBe(200);
    expect(blob.type).toBe("image/png");
    expect(Buffer.from(blob.bytes).equals(Buffer.from(SAMPLES.png))).toBe(true);
    const listed = await callAnonymous<{ cids: string[] }>(server, "com.atproto.sync.listBlobs", { params: { did: alice.did } });
    expect(listed.body.cids).toContain(cid);
    const since = async (rev: string) => (await callAnonymous<{ cids: string[] }>(server, "com.atproto.sync.listBlobs", { params: { did: alice.did, since: rev } })).body.cids;
    expect(await since(before.rev)).toEqual([cid]);
    expect(await since((await latest()).rev)).toEqual([]);
  });

  it("answers the lexicons' errors: RepoNotFound for a DID without a repository, InvalidRequest for bad parameters", async () => {
    for (const nsid of ["getRepo", "getLatestCommit", "getRepoStatus", "listBlobs"]) {
      expectXrpcError(await callAnonymous(server, `com.atproto.sync.${nsid}`, { params: { did: "did:plc:nobodyhere" } }), 400, "RepoNotFound");
    }
    expectXrpcError(await callAnonymous(server, "com.atproto.sync.getRepo", { params: { did: "not-a-did" } }), 400, "InvalidRequest");
    expectXrpcError(await callAnonymous(server, "com.atproto.sync.getRepo", { params: { did: alice.did, since: "yesterday" } }), 400, "InvalidRequest");
    expectXrpcError(await callAnonymous(server, "com.atproto.sync.getBlob", { params: { did: alice.did, cid: "bafkreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm" } }), 400, "BlobNotFound");
  });
});
