import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { contentStoreWith } from "../../../tests/helpers/blob-content-faults.ts";
import { accountWithRepository, repositoriesOn } from "../../../tests/helpers/repositories.ts";
import { countOf, countRows, useSharedDatabase } from "../../../tests/helpers/store-fixtures.ts";
import { sql, type Database } from "../db/sql.ts";
import { rawCid } from "../repo/identifiers.ts";
import { SqlAccountDeletionStore } from "../stores/sql-account-deletion-store.ts";
import { SqlBlobChunks } from "../stores/sql-blob-chunks.ts";
import { SqlBlobStore } from "../stores/sql-blob-store.ts";
import { CONTENT_PIECE_BYTES, type BlobContentStore } from "./blob-content.ts";
import { Blobs, type Upload } from "./blobs.ts";
import { DiskBlobContent } from "./disk-blob-content.ts";

/**
 * Blobs as uploadBlob and getBlob use them (docs/decisions/0043), over the real stores: the SQL register on each engine
 * with the content store each engine gets by default (files on SQLite, chunks on PostgreSQL; files with PostgreSQL
 * are the content stores' contract's and the upgrade test's). An upload streams into its copy with the size limit
 * checked as bytes arrive, and whatever refuses it leaves nothing behind; a download streams; copies no account needs
 * are deleted by the sweeps.
 */
const MAX = 5 * CONTENT_PIECE_BYTES;
const GRACE = 60_000;
const T = 1_800_000_000_000;
const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
/** A collection with no lexicon here: these tests are about blobs, not about records checked against their lexicons. */
const NOTE = "com.example.note";

/** The body of a client sending `bytes` in pieces of `piece` bytes. */
async function* body(bytes: Uint8Array, piece = 10_000): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < bytes.length; offset += piece) yield bytes.subarray(offset, offset + piece);
}

const anyType: Upload["authorizeDetected"] = () => {};

describe.each([
  ["sqlite", "files"],
  ["postgresql", "chunks"],
] as const)("Blobs on %s with the bytes in %s", (engine, kind) => {
  const shared = useSharedDatabase(engine);
  let folder: string;
  let clock: { now: number };
  let reported: unknown[];

  beforeAll(() => {
    folder = mkdtempSync(path.join(os.tmpdir(), "atrium-blobs-"));
  });
  afterAll(() => rmSync(folder, { recursive: true, force: true }));
  beforeEach(async () => {
    rmSync(folder, { recursive: true, force: true });
    clock = { now: T };
    reported = [];
    for (const did of [ALICE, BOB]) await accountWithRepository(shared.db, did, clock);
  });

  function contentOn(db: Database): BlobContentStore {
    return kind === "files" ? new DiskBlobContent(folder) : new SqlBlobChunks(db);
  }

  function blobsOn(db = shared.db, content = contentOn(db), quotaBytes = 100 * MAX): Blobs {
    return new Blobs(new SqlBlobStore(db, { quotaBytes, unreferencedGraceMs: GRACE }), content, {
      maxBytes: MAX,
      now: () => clock.now,
      report: (_message, error) => reported.push(error),
    });
  }

  /** Copies whose bytes the content store holds: files, or keys of chunk rows. */
  async function copiesWithBytes(): Promise<number> {
    if (kind === "chunks") return countOf(shared.db, sql`SELECT COUNT(DISTINCT "key") AS "n" FROM "BlobChunk"`);
    try {
      return readdirSync(folder, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).length;
    } catch {
      return 0; // No folder yet: nothing was ever written.
    }
  }

  /** The copies by state, and how many have bytes in the content store. */
  async function copies(): Promise<{ stored: number; other: number; withBytes: number }> {
    const stored = await countOf(shared.db, sql`SELECT COUNT(*) AS "n" FROM "BlobContent" WHERE "state" = 'stored'`);
    return { stored, other: (await countRows(shared.db, "BlobContent")) - stored, withBytes: await copiesWithBytes() };
  }

  /** Exactly `stored` copies, each with its bytes, and nothing else: no copy being written or deleted, no stray bytes. */
  async function expectNothingLeftBeyond(stored: number): Promise<void> {
    expect(await copies()).toEqual({ stored, other: 0, withBytes: stored });
  }

  const upload = (blobs: Blobs, did: string, bytes: Uint8Array, upload: Partial<Upload> = {}) =>
    blobs.upload(did, { declaredType: "application/octet-stream", body: body(bytes), authorizeDetected: anyType, ...upload });

  async function reference(did: string, rkey: string, cid: string, size: number): Promise<void> {
    await repositoriesOn(shared.db, clock, { blobGraceMs: GRACE, eventRetentionMs: 3600_000 }).writer.write(did, [
      { action: "create", collection: NOTE, rkey, value: { $type: NOTE, text: rkey, image: { $type: "blob", ref: { $link: cid }, mimeType: "image/png", size } } },
    ]);
  }

  async function downloaded(blobs: Blobs, did: string, cid: string): Promise<{ bytes: Buffer; pieces: number[] } | undefined> {
    const download = await blobs.download(did, cid);
    if (!download) return undefined;
    const pieces: Uint8Array[] = [];
    const reader = download.body.getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) pieces.push(next.value);
    return { bytes: Buffer.concat(pieces), pieces: pieces.map((piece) => piece.byteLength) };
  }

  it("stores an upload under the CID of its bytes, with its sniffed type, and serves it back piece by piece once a record references it", async () => {
    const blobs = blobsOn();
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(3 * CONTENT_PIECE_BYTES)]);
    const outcome = await upload(blobs, ALICE, png, { declaredType: "image/png" });
    expect(outcome).toMatchObject({ kind: "stored", blob: { cid: rawCid(png), mimeType: "image/png", size: png.length } });
    // Not referenced yet: not served (the reference PDS serves only what records reference).
    expect(await blobs.download(ALICE, rawCid(png))).toBeUndefined();
    await reference(ALICE, "p1", rawCid(png), png.length);
    const served = (await downloaded(blobs, ALICE, rawCid(png)))!;
    expect(served.bytes.equals(png)).toBe(true);
    expect(Math.max(...served.pieces)).toBeLessThanOrEqual(CONTENT_PIECE_BYTES);
    // Another account's DID with the same CID: not its blob.
    expect(await blobs.download(BOB, rawCid(png))).toBeUndefined();
    await expectNothingLeftBeyond(1);
  });

  it("refuses a body past the size limit as its bytes arrive: a body a hundred times the limit is read only to just past it, and nothing is left", async () => {
    const blobs = blobsOn();
    let pulled = 0;
    const huge = (async function* () {
      for (let i = 0; i < (100 * MAX) / 10_000; i++) {
        pulled += 10_000;
        yield new Uint8Array(10_000);
      }
    })();
    await expect(blobs.upload(ALICE, { declaredType: "text/plain", body: huge, authorizeDetected: anyType })).rejects.toMatchObject({ status: 413, xrpcName: "BlobTooLarge" });
    expect(pulled).toBeLessThanOrEqual(MAX + 10_000);
    await expectNothingLeftBeyond(0);
    expect(await countRows(shared.db, "Blob")).toBe(0);
  });

  it("a blob exactly at the limit is stored", async () => {
    expect(await upload(blobsOn(), ALICE, randomBytes(MAX))).toMatchObject({ kind: "stored", blob: { size: MAX } });
  });

  it("an upload refused for its detected type, by the quota, as empty, or cut off by its client leaves nothing behind", async () => {
    const blobs = blobsOn(shared.db, contentOn(shared.db), 2 * MAX);
    const denied = () => {
      throw new Error("no permission for image/png");
    };
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(2 * CONTENT_PIECE_BYTES)]);
    await expect(upload(blobs, ALICE, png, { declaredType: "text/plain", authorizeDetected: denied })).rejects.toThrow(/no permission/);
    await upload(blobs, ALICE, randomBytes(MAX));
    expect(await upload(blobs, ALICE, randomBytes(MAX))).toMatchObject({ kind: "stored" });
    expect(await upload(blobs, ALICE, randomBytes(2 * CONTENT_PIECE_BYTES))).toMatchObject({ kind: "over-quota" });
    await expect(upload(blobs, ALICE, new Uint8Array(0))).rejects.toMatchObject({ status: 400 });
    const cutOff = (async function* () {
      yield randomBytes(CONTENT_PIECE_BYTES + 1);
      throw new Error("the client went away");
    })();
    await expect(blobs.upload(BOB, { declaredType: "image/png", body: cutOff, authorizeDetected: anyType })).rejects.toThrow(/went away/);
    await expectNothingLeftBeyond(2);
    expect(reported).toEqual([]);
  });

  it("accounts uploading the same bytes share one copy, and the bytes stay until neither has the blob", async () => {
    const blobs = blobsOn();
    const bytes = randomBytes(2 * CONTENT_PIECE_BYTES + 1);
    await upload(blobs, ALICE, bytes);
    await upload(blobs, BOB, bytes);
    await expectNothingLeftBeyond(1);
    // Bob references it; Alice's is never referenced and expires, removed by Bob's next upload.
    await reference(BOB, "p1", rawCid(bytes), bytes.length);
    clock.now = T + GRACE;
    await upload(blobs, BOB, randomBytes(10));
    expect((await downloaded(blobs, BOB, rawCid(bytes)))?.bytes.equals(bytes)).toBe(true);
    await expectNothingLeftBeyond(2);
  });

  it("an unreferenced blob's bytes are deleted by the first upload's sweep after its grace period", async () => {
    const blobs = blobsOn();
    await upload(blobs, ALICE, randomBytes(3 * CONTENT_PIECE_BYTES));
    clock.now = T + GRACE - 1;
    await upload(blobs, BOB, randomBytes(10));
    await expectNothingLeftBeyond(2);
    clock.now = T + GRACE + 1;
    await upload(blobs, BOB, randomBytes(11));
    // Bob's first is unreferenced too, but within its grace period.
    await expectNothingLeftBeyond(2);
    expect(await countRows(shared.db, "Blob")).toBe(2);
  });

  it("an account's deletion, then its sweep, deletes the bytes no other account has, and keeps those another has", async () => {
    const blobs = blobsOn();
    const [own, common] = [randomBytes(CONTENT_PIECE_BYTES + 3), randomBytes(7)];
    for (const bytes of [own, common]) await upload(blobs, ALICE, bytes);
    await upload(blobs, BOB, common);
    for (let i = 0; i < 60; i++) await upload(blobs, ALICE, randomBytes(20));
    await expectNothingLeftBeyond(62);
    await new SqlAccountDeletionStore(shared.db, 3600_000).removeByOperator(ALICE, clock.now);
    await blobs.sweepAll();
    await expectNothingLeftBeyond(1);
    await reference(BOB, "p1", rawCid(common), common.length);
    expect((await downloaded(blobs, BOB, rawCid(common)))?.bytes.equals(common)).toBe(true);
  });

  it("a copy whose bytes could not be removed (a crash, a failing disk) is removed by a later sweep", async () => {
    const content = contentOn(shared.db);
    let failures = 1;
    const failingOnce = contentStoreWith(content, {
      remove: async (key) => {
        if (failures-- > 0) throw new Error("disk failure");
        await content.remove(key);
      },
    });
    const blobs = blobsOn(shared.db, failingOnce);
    const bytes = randomBytes(CONTENT_PIECE_BYTES);
    await upload(blobs, ALICE, bytes);
    clock.now = T + GRACE;
    // Alice's next upload expires the first; its sweep fails to remove the bytes, and says so without failing the upload.
    expect(await upload(blobs, ALICE, randomBytes(10))).toMatchObject({ kind: "stored" });
    expect(reported).toEqual([expect.objectContaining({ message: "disk failure" })]);
    expect(await copies()).toEqual({ stored: 1, other: 1, withBytes: 2 });
    await blobs.sweep();
    await expectNothingLeftBeyond(1);
  });
});
