/**
 * Blob quota and cleanup (docs/decisions/0008), attacked over HTTP: an outside review stored eight unreferenced
 * 5 MB blobs in 0.65 s, and nothing ever removed a blob no record referenced. Here: parallel uploads against a
 * per-account quota, in one process and in two processes sharing one database; and blobs left unreferenced past
 * a short grace period, removed by the next upload or record write.
 */
import { TID } from "@atproto/common-web";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "../../app/.server/db/sql.ts";
import type { HttpResult } from "../../scripts/lib/dpop-client.ts";
import { rowOf } from "../helpers/databases.ts";
import { createAlice } from "../helpers/flow.ts";
import { testClock } from "../helpers/test-clock.ts";
import { startTestServer, type TestServer } from "../helpers/test-server.ts";
import { scopedSession, uploadBlob, type ScopedSession, type XrpcErrorBody } from "../helpers/xrpc-extra.ts";

const SCOPE = "atproto transition:generic";
const BLOB_BYTES = 1024;
/** Room for three blobs of BLOB_BYTES. */
const QUOTA_ENV = { ATRIUM_BLOB_MAX_BYTES: String(BLOB_BYTES), ATRIUM_BLOB_QUOTA_BYTES: String(3 * BLOB_BYTES) };
const POST = "app.bsky.feed.post";

type BlobRef = { $type: "blob"; ref: { $link: string }; mimeType: string; size: number };
type UploadResult = HttpResult<{ blob: BlobRef } & XrpcErrorBody>;

const distinctBlob = () => Uint8Array.from(randomBytes(BLOB_BYTES));
const upload = (session: ScopedSession, bytes = distinctBlob()) => uploadBlob(session, bytes, "application/octet-stream") as Promise<UploadResult>;

async function storedBlobs(server: TestServer, did: string): Promise<{ count: number; bytes: number } | undefined> {
  return rowOf<{ count: number; bytes: number }>(server.database(), sql`SELECT COUNT(*) AS "count", COALESCE(SUM("size"), 0) AS "bytes" FROM "Blob" WHERE "did" = ${did}`);
}

/** Every refusal is the quota's: 413 in the XRPC error shape, naming the sizes; never a 5xx. */
function expectQuotaRefusals(results: UploadResult[]): void {
  for (const result of results.filter((r) => r.status !== 200)) {
    expect({ status: result.status, error: result.body.error }).toEqual({ status: 413, error: "BlobQuotaExceeded" });
    expect(result.body.message).toContain(`This blob (${BLOB_BYTES} bytes)`);
    expect(result.body.message).toContain(`of ${3 * BLOB_BYTES} bytes are in use`);
  }
}

describe("blob quota: parallel uploads in one process (ATRIUM_BLOB_QUOTA_BYTES = 3 blobs)", () => {
  let server: TestServer;
  let alice: { did: string };
  let session: ScopedSession;

  beforeAll(async () => {
    server = await startTestServer(QUOTA_ENV);
    alice = await createAlice(server);
    session = await scopedSession(server, SCOPE);
  });
  afterAll(() => server?.stop());

  /** A blob the first test stored. */
  let storedBytes: Uint8Array<ArrayBuffer> | undefined;

  it("12 parallel uploads of distinct blobs: 3 stored, the total within the quota, the 9 others refused", async () => {
    const sent = Array.from({ length: 12 }, distinctBlob);
    const results = await Promise.all(sent.map((bytes) => upload(session, bytes)));
    const statuses = results.map((result) => result.status);
    expect(statuses.filter((status) => status === 200), JSON.stringify(statuses)).toHaveLength(3);
    expectQuotaRefusals(results);
    expect(await storedBlobs(server, alice.did)).toEqual({ count: 3, bytes: 3 * BLOB_BYTES });
    storedBytes = sent[statuses.indexOf(200)];
  });

  it("re-uploading a blob the account already has costs nothing, even with the quota full", async () => {
    const again = await upload(session, storedBytes!);
    expect(again.status).toBe(200);
    expect(again.body.blob.size).toBe(BLOB_BYTES);
    expect(await storedBlobs(server, alice.did)).toEqual({ count: 3, bytes: 3 * BLOB_BYTES });
    expectQuotaRefusals([await upload(session)]);
  });
});

describe("blob quota: parallel uploads to two server processes sharing one database", () => {
  let first: TestServer;
  let second: TestServer;
  let alice: { did: string };
  const sessions: ScopedSession[] = [];

  beforeAll(async () => {
    first = await startTestServer(QUOTA_ENV);
    second = await startTestServer({ ...QUOTA_ENV, DATABASE_URL: first.databaseUrl });
    alice = await createAlice(first);
    sessions.push(await scopedSession(first, SCOPE), await scopedSession(second, SCOPE));
  });
  afterAll(async () => {
    await second?.stop();
    await first?.stop();
  });

  it("12 parallel uploads, alternating between the processes: 3 stored in total, never more", async () => {
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => upload(sessions[i % 2]!)));
    const statuses = results.map((result) => result.status);
    expect(statuses.filter((status) => status === 200), JSON.stringify(statuses)).toHaveLength(3);
    expectQuotaRefusals(results);
    expect(await storedBlobs(first, alice.did)).toEqual({ count: 3, bytes: 3 * BLOB_BYTES });
  });
});

describe("unreferenced blobs are deleted after the grace period (ATRIUM_BLOB_UNREFERENCED_GRACE_SECONDS=10)", () => {
  // Ten seconds: far longer than a loaded machine takes between two steps of a test, so "kept through its grace" holds
  // whatever the load; the grace is passed by moving the server's clock, not by waiting (docs/decisions/0036).
  const GRACE_MS = 10_000;
  const clock = testClock();
  let server: TestServer;
  let alice: { did: string };
  let session: ScopedSession;

  beforeAll(async () => {
    server = await startTestServer({
      ...clock.env,
      ATRIUM_BLOB_UNREFERENCED_GRACE_SECONDS: String(GRACE_MS / 1000),
      // The clock moves 84 s in all; the test client's DPoP proofs carry the real time, so they may be that old.
      ATRIUM_DPOP_MAX_AGE_SECONDS: "600",
    });
    alice = await createAlice(server);
    session = await scopedSession(server, SCOPE);
  });
  afterAll(async () => {
    await server?.stop();
    clock.remove();
  });

  const pastTheGrace = () => clock.advance(GRACE_MS + 500);
  const isStored = async (blob: BlobRef) =>
    (await rowOf(server.database(), sql`SELECT 1 AS "stored" FROM "Blob" WHERE "did" = ${alice.did} AND "cid" = ${blob.ref.$link}`)) !== undefined;

  async function uploaded(): Promise<BlobRef> {
    const result = await upload(session);
    expect(result.status).toBe(200);
    return result.body.blob;
  }

  /** A post's record key: a TID, as its lexicon asks (docs/decisions/0049). */
  const freshKey = () => TID.nextStr();
  const postWith = (...blobs: BlobRef[]) => ({
    $type: POST,
    text: "pictures",
    createdAt: new Date().toISOString(),
    embed: { $type: "app.bsky.embed.images", images: blobs.map((image) => ({ alt: "", image })) },
  });

  async function write(nsid: string, json: Record<string, unknown>): Promise<void> {
    const result = await session.client.xrpc(session.accessToken, nsid, { json: { repo: alice.did, ...json } });
    expect(result.status, JSON.stringify(result.body)).toBe(200);
  }
  const createPost = (rkey: string, ...blobs: BlobRef[]) => write("com.atproto.repo.createRecord", { collection: POST, rkey, record: postWith(...blobs) });
  const deletePost = (rkey: string) => write("com.atproto.repo.deleteRecord", { collection: POST, rkey });
  /** Any upload runs the lazy cleanup. */
  const laterUpload = () => uploaded();

  it("an unreferenced blob outlives its grace period only until the next upload, which deletes it", async () => {
    const orphan = await uploaded();
    pastTheGrace();
    expect(await isStored(orphan)).toBe(true); // lazy: nothing runs in the background
    await laterUpload();
    expect(await isStored(orphan)).toBe(false);
  });

  it("a record write deletes expired unreferenced blobs too", async () => {
    const orphan = await uploaded();
    pastTheGrace();
    await createPost(freshKey());
    expect(await isStored(orphan)).toBe(false);
  });

  it("blobs referenced by records survive the grace period", async () => {
    const [image, avatar] = [await uploaded(), await uploaded()];
    const rkey = freshKey();
    await createPost(rkey, image);
    await write("com.atproto.repo.putRecord", { collection: "app.bsky.actor.profile", rkey: "self", record: { displayName: "Alice", avatar } });
    pastTheGrace();
    await laterUpload();
    expect([await isStored(image), await isStored(avatar)]).toEqual([true, true]);
  });

  it("a new record naming a blob in the legacy form is refused, as the reference PDS does, and does not keep the blob", async () => {
    // Records written before keep their legacy references, which still count (blob-refs.test.ts, the migration).
    const avatar = await uploaded();
    const legacy = { cid: avatar.ref.$link, mimeType: avatar.mimeType };
    const refused = await session.client.xrpc(session.accessToken, "com.atproto.repo.putRecord", {
      json: { repo: alice.did, collection: "com.example.profile", rkey: "self", validate: false, record: { avatar: legacy } },
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: "InvalidRecord", message: `Legacy blobs are not allowed (${avatar.ref.$link})` });
    pastTheGrace();
    await laterUpload();
    expect(await isStored(avatar)).toBe(false);
  });

  it("deleting the record starts the blob's grace period: kept through it, deleted after it", async () => {
    const image = await uploaded();
    const rkey = freshKey();
    await createPost(rkey, image);
    pastTheGrace();
    await deletePost(rkey);
    await laterUpload();
    expect(await isStored(image)).toBe(true);
    pastTheGrace();
    await laterUpload();
    expect(await isStored(image)).toBe(false);
  });

  it("updating the record away from the blob (putRecord, applyWrites#update) starts its grace period", async () => {
    const [first, second] = [await uploaded(), await uploaded()];
    const [byPut, byApply] = [freshKey(), freshKey()];
    await createPost(byPut, first);
    await createPost(byApply, second);
    await write("com.atproto.repo.putRecord", { collection: POST, rkey: byPut, record: postWith() });
    await write("com.atproto.repo.applyWrites", {
      writes: [{ $type: "com.atproto.repo.applyWrites#update", collection: POST, rkey: byApply, value: postWith() }],
    });
    pastTheGrace();
    await laterUpload();
    expect([await isStored(first), await isStored(second)]).toEqual([false, false]);
  });

  it("a blob referenced by two records survives deletion of one, and goes after the other is deleted", async () => {
    const shared = await uploaded();
    const [one, two] = [freshKey(), freshKey()];
    await write("com.atproto.repo.applyWrites", {
      writes: [
        { $type: "com.atproto.repo.applyWrites#create", collection: POST, rkey: one, value: postWith(shared) },
        { $type: "com.atproto.repo.applyWrites#create", collection: POST, rkey: two, value: postWith(shared) },
      ],
    });
    await deletePost(one);
    pastTheGrace();
    await laterUpload();
    expect(await isStored(shared)).toBe(true);
    await write("com.atproto.repo.applyWrites", { writes: [{ $type: "com.atproto.repo.applyWrites#delete", collection: POST, rkey: two }] });
    pastTheGrace();
    await laterUpload();
    expect(await isStored(shared)).toBe(false);
  });
});
