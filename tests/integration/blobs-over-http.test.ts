/**
 * Blobs over HTTP against a started server (docs/decisions/0043), whose bytes are files under its data folder on
 * SQLite and chunks in the database on PostgreSQL, attacked as the outside reviews of issue 28 did:
 * - an uploaded HTML page must never render on this origin, and only blobs a record references are served (item 8);
 * - uploadBlob under another spelling of its NSID is uploadBlob, and a body past its route's limit is 413, never
 *   cut short and stored (item 9);
 * - downloads stream: clients that do not read hold the server to a small constant each, whatever the blob's size;
 *   an account's deletion removes its blobs' bytes; bytes stored in rows before the upgrade are moved at start
 *   (item 12).
 */
import { randomBytes } from "node:crypto";
import { TID } from "@atproto/common-web";
import { existsSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Blobs } from "../../app/.server/blobs/blobs.ts";
import { DiskBlobContent } from "../../app/.server/blobs/disk-blob-content.ts";
import { CONTENT_PIECE_BYTES } from "../../app/.server/blobs/blob-content.ts";
import { run as runStatement, sql, type Program } from "../../app/.server/db/sql.ts";
import { SqlBlobChunks } from "../../app/.server/stores/sql-blob-chunks.ts";
import { SqlBlobStore } from "../../app/.server/stores/sql-blob-store.ts";
import { createDpopProof, readResult, type HttpResult } from "../../scripts/lib/dpop-client.ts";
import { runAccountCommand } from "../../scripts/lib/account-commands.ts";
import { rowOf, rowsOf } from "../helpers/databases.ts";
import { createAlice } from "../helpers/flow.ts";
import { bytesInKernel, bytesRead, kernelQueues, openFilesUnder, stalledDownloads, until, untilSteady } from "../helpers/stalled-downloads.ts";
import { countOf } from "../helpers/store-fixtures.ts";
import { createAccount, startTestServer, type TestServer } from "../helpers/test-server.ts";
import { call, callRaw, expectXrpcError, tokenWithScope, type ScopedToken } from "../helpers/xrpc.ts";
import { blobCid } from "../helpers/xrpc-extra.ts";

const MIB = 1024 * 1024;
/** Large enough for the streaming tests' blob, which must be far larger than what the kernel buffers per connection. */
const MAX_BLOB = 16 * MIB;
const POST = "app.bsky.feed.post";

type BlobRef = { $type: "blob"; ref: { $link: string }; mimeType: string; size: number };

let server: TestServer;
let alice: { did: string };
let token: ScopedToken;

beforeAll(async () => {
  server = await startTestServer({ ATRIUM_BLOB_MAX_BYTES: String(MAX_BLOB) });
  alice = await createAlice(server);
  token = await tokenWithScope(server, "atproto transition:generic");
});
afterAll(() => server?.stop());

/** The folder of the server's blob files (the default beside its SQLite file), or undefined on PostgreSQL (chunks). */
const blobFolder = () => (server.databasePath === undefined ? undefined : path.join(path.dirname(server.databasePath), "blobs"));

async function upload(bytes: Uint8Array, contentType: string): Promise<BlobRef> {
  const result = await callRaw<{ blob: BlobRef }>(token, "POST", "com.atproto.repo.uploadBlob", { body: Buffer.from(bytes), headers: { "content-type": contentType } });
  expect(result.status, JSON.stringify(result.body)).toBe(200);
  return result.body.blob;
}

/** A post whose embed references the blobs; its record key (a TID, as the post lexicon's key type asks). */
async function referenceIn(...blobs: BlobRef[]): Promise<string> {
  const rkey = TID.nextStr();
  const created = await call(token, "com.atproto.repo.createRecord", {
    json: { repo: alice.did, collection: POST, rkey, record: { $type: POST, text: "blobs", createdAt: new Date().toISOString(), embed: { $type: "app.bsky.embed.images", images: blobs.map((image) => ({ alt: "", image })) } } },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  return rkey;
}

const getBlob = (did: string, cid: string, method = "GET") => fetch(`${server.issuer}/xrpc/com.atproto.sync.getBlob?${new URLSearchParams({ did, cid })}`, { method });

/**
 * POSTs `bytes` with the token, chunked (no Content-Length: the body arrives as a stream, as a browser's or a proxy's
 * may), to `/xrpc/<nsid>` spelled as given; retried once on a DPoP nonce challenge.
 */
async function chunkedPost<T>(nsid: string, bytes: Uint8Array, contentType: string): Promise<HttpResult<T>> {
  const url = `${server.issuer}/xrpc/${nsid}`;
  let result: HttpResult<T> | undefined;
  for (let attempt = 0; attempt < 2; attempt++) {
    const proof = await createDpopProof(token.client.key, { method: "POST", url, nonce: token.client.nonce, accessToken: token.accessToken });
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let offset = 0; offset < bytes.length; offset += 256 * 1024) controller.enqueue(bytes.slice(offset, offset + 256 * 1024));
        controller.close();
      },
    });
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": contentType, Authorization: `DPoP ${token.accessToken}`, DPoP: proof },
      body,
      duplex: "half",
    } as RequestInit);
    token.client.nonce = response.headers.get("DPoP-Nonce") ?? token.client.nonce;
    result = await readResult<T>(response);
    if (result.status !== 401 || !/use_dpop_nonce/.test(result.headers.get("WWW-Authenticate") ?? "")) return result;
  }
  return result!;
}

describe("getBlob never serves a blob as a page of this origin (issue 28, item 8)", () => {
  const encode = (text: string) => new TextEncoder().encode(text);
  /** One invalid UTF-8 byte: the bytes are not text to the sniffer, so the declared type is the one stored. */
  const withInvalidByte = (text: string) => Uint8Array.from([...encode(text), 0xff]);

  it.each([
    ["an HTML page with one invalid byte", withInvalidByte("<!doctype html><script>parent.document.cookie</script>"), "text/html"],
    ["an SVG image with a script and one invalid byte", withInvalidByte('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'), "image/svg+xml"],
    ["an XML document", withInvalidByte("<?xml version='1.0'?><x/>"), "application/xml"],
    ["a script", withInvalidByte("alert(document.domain)"), "text/javascript"],
    ["plain text", encode("words"), "text/plain"],
  ])("%s is stored with its declared type and served as an attachment of application/octet-stream", async (_name, bytes, declared) => {
    const blob = await upload(bytes, declared);
    expect(blob.mimeType).toBe(declared);
    await referenceIn(blob);
    const answer = await getBlob(alice.did, blob.ref.$link);
    expect(answer.status).toBe(200);
    expect({
      type: answer.headers.get("content-type"),
      disposition: answer.headers.get("content-disposition"),
      nosniff: answer.headers.get("x-content-type-options"),
      csp: answer.headers.get("content-security-policy"),
      length: answer.headers.get("content-length"),
    }).toEqual({
      type: "application/octet-stream",
      disposition: `attachment; filename="${blob.ref.$link}"`,
      nosniff: "nosniff",
      csp: "default-src 'none'; sandbox",
      length: String(bytes.length),
    });
    expect(Buffer.from(await answer.arrayBuffer()).equals(Buffer.from(bytes))).toBe(true);
  });

  it("a PNG keeps its image type, still as an attachment, sandboxed and never sniffed", async () => {
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(100)]);
    const blob = await upload(png, "image/png");
    await referenceIn(blob);
    const answer = await getBlob(alice.did, blob.ref.$link);
    expect([answer.status, answer.headers.get("content-type"), answer.headers.get("content-disposition"), answer.headers.get("x-content-type-options")]).toEqual([
      200,
      "image/png",
      `attachment; filename="${blob.ref.$link}"`,
      "nosniff",
    ]);
    expect(answer.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
  });

  it("serves only blobs a record of the account references: not before, not after the record is deleted, not under another DID", async () => {
    const blob = await upload(randomBytes(500), "image/jpeg");
    expectXrpcError(await readResult(await getBlob(alice.did, blob.ref.$link)), 400, "BlobNotFound");
    const rkey = await referenceIn(blob);
    expect((await getBlob(alice.did, blob.ref.$link)).status).toBe(200);
    const bob = await createAccount(server, { handle: "bob.test", email: "bob@example.com", password: "bob's long password" });
    // Bob exists but has no such blob (and, with no record yet, a repository of his first commit).
    expectXrpcError(await readResult(await getBlob(bob.did, blob.ref.$link)), 400, "BlobNotFound");
    expect((await call(token, "com.atproto.repo.deleteRecord", { json: { repo: alice.did, collection: POST, rkey } })).status).toBe(200);
    expectXrpcError(await readResult(await getBlob(alice.did, blob.ref.$link)), 400, "BlobNotFound");
    expectXrpcError(await readResult(await getBlob("did:plc:nobodyhere2345678abcdefg", blob.ref.$link)), 400, "RepoNotFound");
  });

  it("HEAD answers the same headers, without the bytes", async () => {
    const blob = await upload(randomBytes(3 * CONTENT_PIECE_BYTES), "video/mp4");
    await referenceIn(blob);
    const head = await getBlob(alice.did, blob.ref.$link, "HEAD");
    expect([head.status, head.headers.get("content-type"), head.headers.get("content-length"), head.headers.get("content-disposition")]).toEqual([
      200,
      "video/mp4",
      String(3 * CONTENT_PIECE_BYTES),
      `attachment; filename="${blob.ref.$link}"`,
    ]);
    expect((await head.arrayBuffer()).byteLength).toBe(0);
  });
});

describe("a request body reaching its route's limit is refused, never cut short (issue 28, item 9)", () => {
  it("a chunked 3 MiB upload to COM.ATPROTO.repo.uploadBlob is uploadBlob: stored whole, under the CID of all its bytes", async () => {
    const bytes = randomBytes(3 * MIB);
    const result = await chunkedPost<{ blob: BlobRef }>("COM.ATPROTO.repo.uploadBlob", bytes, "application/octet-stream");
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    expect(result.body.blob).toMatchObject({ size: bytes.length, ref: { $link: await blobCid(bytes) } });
  });

  it("one byte past ATRIUM_BLOB_MAX_BYTES, chunked, under another spelling: 413 BlobTooLarge, and nothing stored", async () => {
    // The exact spelling's refusal of a chunked body is xrpc-blob-prefs.test.ts's.
    const bytes = randomBytes(MAX_BLOB + 1);
    const before = await countOf(server.database(), sql`SELECT COUNT(*) AS "n" FROM "BlobContent"`);
    const result = await chunkedPost<{ error: string }>("Com.Atproto.Repo.uploadBlob", bytes, "application/octet-stream");
    expect({ status: result.status, error: result.body.error }).toEqual({ status: 413, error: "BlobTooLarge" });
    expect(await countOf(server.database(), sql`SELECT COUNT(*) AS "n" FROM "Blob" WHERE "size" > ${MAX_BLOB - 1}`)).toBe(0);
    expect(await countOf(server.database(), sql`SELECT COUNT(*) AS "n" FROM "BlobContent"`)).toBe(before);
  });

  it("a chunked JSON body past 1 MiB to createRecord is 413 PayloadTooLarge, not read as a cut-off JSON text", async () => {
    const json = new TextEncoder().encode(JSON.stringify({ repo: alice.did, collection: POST, record: { $type: POST, text: "x".repeat(2 * MIB), createdAt: new Date().toISOString() } }));
    for (const nsid of ["com.atproto.repo.createRecord", "COM.atproto.REPO.createRecord"]) {
      const result = await chunkedPost<{ error: string }>(nsid, json, "application/json");
      expect({ nsid, status: result.status, error: result.body.error }).toEqual({ nsid, status: 413, error: "PayloadTooLarge" });
    }
  });
});

describe("downloads stream (issue 28, item 12)", () => {
  it("clients that read nothing hold the server to a small constant each, whatever the blob's size; the server lets go when they leave", async () => {
    const bytes = randomBytes(12 * MIB);
    const blob = await upload(bytes, "video/mp4");
    await referenceIn(blob);
    const port = Number(new URL(server.issuer).port);
    // What the server reads to serve one byte of the blob, from one download read whole: about 1 from a file, about 2
    // from PostgreSQL (which sends bytea as hexadecimal text).
    const readForOne = bytesRead(server.pid);
    expect((await (await getBlob(alice.did, blob.ref.$link)).arrayBuffer()).byteLength).toBe(bytes.length);
    const readPerByte = (bytesRead(server.pid) - readForOne) / bytes.length;
    const readBefore = bytesRead(server.pid);
    const clients = await stalledDownloads(port, `/xrpc/com.atproto.sync.getBlob?${new URLSearchParams({ did: alice.did, cid: blob.ref.$link })}`, 6);
    const ports = clients.map((client) => client.port);
    try {
      // Until every download has started, and then until the server has stopped reading: its writes all wait for the clients.
      await until(() => [...kernelQueues(port, ports).values()].every((queues) => queues.received > 0));
      await untilSteady(() => bytesRead(server.pid));
      const read = (bytesRead(server.pid) - readBefore) / readPerByte;
      const inKernel = bytesInKernel(port, ports);
      // What the server read of the blob and has not handed to the kernel is in its own memory: a few pieces a download.
      const heldPerDownload = (read - inKernel) / clients.length;
      expect(heldPerDownload, `read ${Math.round(read)} bytes of the blob, ${inKernel} of them in the kernel's queues`).toBeLessThan(4 * CONTENT_PIECE_BYTES);
      // The test proves something only if each download had to stop well before its end: the blob is far larger than
      // what the kernel takes on a connection (about 4 MiB here, with tcp_wmem's default maximum).
      expect(inKernel / clients.length).toBeLessThan(bytes.length / 2);
      const folder = blobFolder();
      if (folder) expect(openFilesUnder(server.pid, folder)).toBe(clients.length);
    } finally {
      for (const client of clients) client.socket.destroy();
    }
    const folder = blobFolder();
    if (folder) await untilSteady(() => openFilesUnder(server.pid, folder), { stable: 3 }).then((open) => expect(open).toBe(0));
  });

  it("a download that is read gets every byte, in order", async () => {
    const bytes = randomBytes(5 * MIB + 3);
    const blob = await upload(bytes, "audio/mpeg");
    await referenceIn(blob);
    const answer = await getBlob(alice.did, blob.ref.$link);
    expect(answer.headers.get("content-length")).toBe(String(bytes.length));
    expect(Buffer.from(await answer.arrayBuffer()).equals(bytes)).toBe(true);
  });
});

describe("an account's deletion removes its blobs' bytes (issue 28, item 12)", () => {
  it("npm run account -- delete: the bytes no other account has are gone from the blob store", async () => {
    const carol = await createAccount(server, { handle: "carol.test", email: "carol@example.com", password: "carol's long password" });
    // Carol's uploads, through the server's own stores (no token of hers is needed to store bytes as an upload does).
    const db = server.database();
    const folder = blobFolder();
    const reported: unknown[] = [];
    const blobs = new Blobs(new SqlBlobStore(db, { quotaBytes: 2 ** 30, unreferencedGraceMs: 3600_000 }), folder ? new DiskBlobContent(folder) : new SqlBlobChunks(db), {
      maxBytes: MAX_BLOB,
      now: Date.now,
      report: (_message, error) => reported.push(error),
    });
    const own = randomBytes(2 * CONTENT_PIECE_BYTES);
    const shared = randomBytes(1000);
    await upload(shared, "application/octet-stream");
    for (const bytes of [own, shared]) {
      const body = (async function* () {
        yield bytes;
      })();
      const stored = await blobs.upload(carol.did, { declaredType: "image/png", body, authorizeDetected: () => {} });
      expect(stored.kind).toBe("stored");
    }
    const keyOf = async (bytes: Uint8Array) => (await rowOf<{ key: string }>(db, sql`SELECT "key" FROM "BlobContent" WHERE "cid" = ${await blobCid(bytes)}`))?.key;
    const [ownKey, sharedKey] = [await keyOf(own), await keyOf(shared)];
    const hasBytes = async (key: string) =>
      folder ? existsSync(path.join(folder, key.slice(0, 2), key)) : (await countOf(db, sql`SELECT COUNT(*) AS "n" FROM "BlobChunk" WHERE "key" = ${key}`)) > 0;
    expect([await hasBytes(ownKey!), await hasBytes(sharedKey!)]).toEqual([true, true]);

    const printed: string[] = [];
    await runAccountCommand(["delete", "--handle", "carol.test"], { env: { ...process.env, DATABASE_URL: server.databaseUrl, PUBLIC_URL: server.issuer }, print: (line) => printed.push(line) });
    expect(JSON.parse(printed.join(""))).toMatchObject({ did: carol.did, deleted: true });
    expect(await rowsOf(db, sql`SELECT "cid" FROM "Blob" WHERE "did" = ${carol.did}`)).toEqual([]);
    // Carol's own bytes are gone; those Alice has too stay.
    expect([await hasBytes(ownKey!), await hasBytes(sharedKey!)]).toEqual([false, true]);
    expect(await keyOf(own)).toBeUndefined();
    expect(await countOf(db, sql`SELECT COUNT(*) AS "n" FROM "BlobContent" WHERE "state" <> 'stored'`)).toBe(0);
    expect(reported).toEqual([]);
  });
});

describe("blobs stored in their rows before the upgrade are served after it (issue 28, item 12)", () => {
  it("a restart moves their bytes into the blob store, and getBlob serves them", async () => {
    const legacy = await startTestServer();
    try {
      const owner = await createAlice(legacy);
      const legacyToken = await tokenWithScope(legacy, "atproto transition:generic");
      const bytes = randomBytes(3 * CONTENT_PIECE_BYTES + 17);
      const uploaded = await callRaw<{ blob: BlobRef }>(legacyToken, "POST", "com.atproto.repo.uploadBlob", { body: bytes, headers: { "content-type": "image/webp" } });
      const created = await call(legacyToken, "com.atproto.repo.createRecord", {
        json: { repo: owner.did, collection: POST, record: { $type: POST, text: "old", createdAt: new Date().toISOString(), embed: { $type: "app.bsky.embed.images", images: [{ alt: "", image: uploaded.body.blob }] } } },
      });
      expect(created.status).toBe(200);
      const cid = uploaded.body.blob.ref.$link;
      // Back to how the blob was kept before the content store: its bytes in its row, no copy, no file, no chunk.
      const db = legacy.database();
      await db.transaction(function* (): Program<void> {
        yield* runStatement(sql`UPDATE "Blob" SET "bytes" = ${bytes} WHERE "cid" = ${cid}`);
        yield* runStatement(sql`DELETE FROM "BlobContent"`);
      });
      const folder = legacy.databasePath === undefined ? undefined : path.join(path.dirname(legacy.databasePath), "blobs");
      if (folder) for (const entry of readdirSync(folder)) rmSync(path.join(folder, entry), { recursive: true });
      expectXrpcError(await readResult(await fetch(`${legacy.issuer}/xrpc/com.atproto.sync.getBlob?${new URLSearchParams({ did: owner.did, cid })}`)), 400, "BlobNotFound");

      const restarted = await startTestServer({ DATABASE_URL: legacy.databaseUrl });
      try {
        const answer = await fetch(`${restarted.issuer}/xrpc/com.atproto.sync.getBlob?${new URLSearchParams({ did: owner.did, cid })}`);
        expect(answer.status).toBe(200);
        expect(Buffer.from(await answer.arrayBuffer()).equals(bytes)).toBe(true);
        expect(await countOf(db, sql`SELECT COUNT(*) AS "n" FROM "Blob" WHERE length("bytes") > 0`)).toBe(0);
      } finally {
        await restarted.stop();
      }
    } finally {
      await legacy.stop();
    }
  });
});
