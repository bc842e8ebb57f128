import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqlite } from "../db/index.ts";
import { migrateDatabase } from "../db/migrate.ts";
import type { NewBlob } from "../repo/blob-store.ts";
import { rawCid } from "../repo/identifiers.ts";
import type { RecordWrite } from "../repo/repo-store.ts";
import { BLOB_CLEANUP_BATCH, BLOB_SQL, SqliteBlobStore } from "./sqlite-blob-store.ts";
import { SqliteRepoStore } from "./sqlite-repo-store.ts";

/**
 * docs/decisions/0008: the per-account blob quota is one atomic step, and blobs no record references are deleted
 * lazily after a grace period. Two connections on one file stand for two server processes; the clock is an argument.
 */
const SIZE = 1000;
const QUOTA = 3 * SIZE;
const GRACE = 60_000;
const ALICE = "did:plc:alice";
const BOB = "did:plc:bob";
const POST = "app.bsky.feed.post";

type Side = { db: Database.Database; blobs: SqliteBlobStore; repo: SqliteRepoStore };

let dir: string;
let file: string;
let sides: Side[];
let now: number;

function open(limits = { quotaBytes: QUOTA, unreferencedGraceMs: GRACE }): Side {
  const db = openSqlite(file);
  const blobs = new SqliteBlobStore(db, limits);
  const side = { db, blobs, repo: new SqliteRepoStore(db, blobs) };
  sides.push(side);
  return side;
}

/** Distinct bytes per `seed`: a blob of its own CID. */
function blob(seed: number, size = SIZE): NewBlob {
  const bytes = new Uint8Array(size).fill(seed % 256);
  bytes[0] = Math.floor(seed / 256);
  return { cid: rawCid(bytes), declaredType: "application/octet-stream", mimeType: "application/octet-stream", bytes };
}

const blobRef = (cid: string) => ({ $type: "blob", ref: { $link: cid }, mimeType: "application/octet-stream", size: SIZE });
const post = (rkey: string, ...cids: string[]): RecordWrite => {
  const value = { $type: POST, text: rkey, images: cids.map(blobRef) };
  return { action: "create", collection: POST, rkey, value, cid: rawCid(JSON.stringify(value)) };
};
const put = (rkey: string, ...cids: string[]): RecordWrite => ({ ...post(rkey, ...cids), action: "update" });
const del = (rkey: string): RecordWrite => ({ action: "delete", collection: POST, rkey });

const stored = (side: Side, did = ALICE) =>
  (side.db.prepare(`SELECT cid FROM "Blob" WHERE did = ? ORDER BY cid`).pluck().all(did) as string[]).sort();
const unreferencedSince = (side: Side, cid: string, did = ALICE) =>
  side.db.prepare(`SELECT unreferencedSince FROM "Blob" WHERE did = ? AND cid = ?`).pluck().get(did, cid) as number | null | undefined;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "atrium-blobs-"));
  file = path.join(dir, "atrium.db");
  migrateDatabase(file);
  sides = [];
  now = 1_800_000_000_000;
  const setup = openSqlite(file);
  for (const did of [ALICE, BOB]) {
    setup
      .prepare(`INSERT INTO "Account" (did, handle, email, passwordHash, signingKey, createdAt, updatedAt) VALUES (?, ?, ?, 'x', '{}', 0, 0)`)
      .run(did, `${did.slice(8)}.test`, `${did.slice(8)}@example.com`);
  }
  setup.close();
});
afterEach(() => {
  for (const side of sides) side.db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("blob quota: one atomic step per upload", () => {
  it("stores blobs up to the quota, then refuses with the numbers and writes nothing", () => {
    const { blobs, ...side } = open();
    for (let seed = 1; seed <= 3; seed++) expect(blobs.putBlob(ALICE, blob(seed), now).kind).toBe("stored");
    expect(blobs.putBlob(ALICE, blob(4), now)).toEqual({ kind: "over-quota", usedBytes: QUOTA, quotaBytes: QUOTA });
    expect(stored({ blobs, ...side })).toHaveLength(3);
  });

  it("a blob that would overshoot by one byte is refused; one that fits exactly is stored", () => {
    const { blobs } = open();
    expect(blobs.putBlob(ALICE, blob(1, QUOTA - 10), now).kind).toBe("stored");
    expect(blobs.putBlob(ALICE, blob(2, 11), now)).toMatchObject({ kind: "over-quota", usedBytes: QUOTA - 10 });
    expect(blobs.putBlob(ALICE, blob(3, 10), now).kind).toBe("stored");
  });

  it("re-uploading a blob the account already has costs nothing, even at the quota", () => {
    const side = open();
    for (let seed = 1; seed <= 3; seed++) side.blobs.putBlob(ALICE, blob(seed), now);
    expect(side.blobs.putBlob(ALICE, blob(2), now)).toEqual({ kind: "stored", blob: { cid: blob(2).cid, mimeType: "application/octet-stream", size: SIZE } });
    expect(stored(side)).toHaveLength(3);
  });

  it("quotas are per account", () => {
    const side = open();
    for (let seed = 1; seed <= 3; seed++) side.blobs.putBlob(ALICE, blob(seed), now);
    expect(side.blobs.putBlob(BOB, blob(1), now).kind).toBe("stored");
    expect(side.blobs.putBlob(ALICE, blob(9), now).kind).toBe("over-quota");
  });

  it("two connections on one file share one quota: alternating uploads stop at it", () => {
    const [first, second] = [open(), open()];
    const outcomes = Array.from({ length: 12 }, (_, i) => (i % 2 ? second : first).blobs.putBlob(ALICE, blob(i + 1), now).kind);
    expect(outcomes.filter((kind) => kind === "stored")).toHaveLength(3);
    const total = first.db.prepare(BLOB_SQL.bytesOfAccount).pluck().get(ALICE) as number;
    expect(total).toBeLessThanOrEqual(QUOTA);
  });

  it("the sum is read under the write lock: while another connection holds it, an upload waits instead of reading a stale sum", () => {
    const [holder, uploader] = [open(), open()];
    uploader.db.pragma("busy_timeout = 0");
    holder.db.exec("BEGIN IMMEDIATE");
    for (let seed = 1; seed <= 3; seed++) {
      const { cid, bytes } = blob(seed);
      holder.db
        .prepare(`INSERT INTO "Blob" (did, cid, declaredType, mimeType, size, bytes, createdAt, unreferencedSince) VALUES (?, ?, 'x', 'x', ?, ?, ?, ?)`)
        .run(ALICE, cid, SIZE, Buffer.from(bytes), now, now);
    }
    // A deferred transaction would have summed 0 bytes here and inserted once the lock was free.
    expect(() => uploader.blobs.putBlob(ALICE, blob(4), now)).toThrow(/locked|busy/i);
    holder.db.exec("COMMIT");
    expect(uploader.blobs.putBlob(ALICE, blob(4), now)).toEqual({ kind: "over-quota", usedBytes: QUOTA, quotaBytes: QUOTA });
  });

  it("sums the account's bytes from an index alone, never reading blob contents", () => {
    const { db } = open();
    const plan = (db.prepare(`EXPLAIN QUERY PLAN ${BLOB_SQL.bytesOfAccount}`).all(ALICE) as { detail: string }[]).map((row) => row.detail);
    expect(plan).toEqual([expect.stringMatching(/^SEARCH Blob USING COVERING INDEX Blob_did_unreferencedSince_size_idx \(did=\?\)$/)]);
  });
});

describe("unreferenced blobs: deleted lazily after the grace period", () => {
  it("an unreferenced blob stays through its grace period and goes with the first upload after it", () => {
    const side = open();
    const orphan = blob(1);
    side.blobs.putBlob(ALICE, orphan, now);
    expect(unreferencedSince(side, orphan.cid)).toBe(now);
    now += GRACE - 1;
    side.blobs.putBlob(BOB, blob(2), now);
    expect(stored(side)).toEqual([orphan.cid]);
    now += 1;
    side.blobs.putBlob(BOB, blob(3), now);
    expect(stored(side)).toEqual([]);
  });

  it("a record write also removes expired blobs, of any account", () => {
    const side = open();
    side.blobs.putBlob(BOB, blob(1), now);
    now += GRACE;
    side.repo.applyWrites(ALICE, [post("p1")], now);
    expect(stored(side, BOB)).toEqual([]);
  });

  it("a blob a record references survives the grace period", () => {
    const side = open();
    const image = blob(1);
    side.blobs.putBlob(ALICE, image, now);
    side.repo.applyWrites(ALICE, [post("p1", image.cid)], now + 1);
    expect(unreferencedSince(side, image.cid)).toBeNull();
    now += 10 * GRACE;
    side.blobs.putBlob(ALICE, blob(2), now);
    expect(stored(side)).toContain(image.cid);
  });

  it("deleting the record starts the blob's grace period", () => {
    const side = open();
    const image = blob(1);
    side.blobs.putBlob(ALICE, image, now);
    side.repo.applyWrites(ALICE, [post("p1", image.cid)], now);
    now += 5 * GRACE;
    side.repo.applyWrites(ALICE, [del("p1")], now);
    expect(unreferencedSince(side, image.cid)).toBe(now);
    now += GRACE - 1;
    side.blobs.putBlob(BOB, blob(2), now);
    expect(stored(side)).toEqual([image.cid]);
    now += 1;
    side.blobs.putBlob(BOB, blob(3), now);
    expect(stored(side)).toEqual([]);
  });

  it("updating the record away from the blob starts its grace; the blob it now references loses its own", () => {
    const side = open();
    const [before, after] = [blob(1), blob(2)];
    side.blobs.putBlob(ALICE, before, now);
    side.blobs.putBlob(ALICE, after, now);
    side.repo.applyWrites(ALICE, [post("p1", before.cid)], now);
    now += 1000;
    side.repo.applyWrites(ALICE, [put("p1", after.cid)], now);
    expect(unreferencedSince(side, before.cid)).toBe(now);
    expect(unreferencedSince(side, after.cid)).toBeNull();
  });

  it("a blob referenced by two records survives deletion of one, and starts its grace with the other", () => {
    const side = open();
    const shared = blob(1);
    side.blobs.putBlob(ALICE, shared, now);
    side.repo.applyWrites(ALICE, [post("p1", shared.cid), post("p2", shared.cid)], now);
    side.repo.applyWrites(ALICE, [del("p1")], now);
    expect(unreferencedSince(side, shared.cid)).toBeNull();
    now += 2 * GRACE;
    side.repo.applyWrites(ALICE, [del("p2")], now);
    expect(unreferencedSince(side, shared.cid)).toBe(now);
  });

  it("within one applyWrites batch, a reference moved from a deleted record to a new one keeps the blob referenced", () => {
    const side = open();
    const image = blob(1);
    side.blobs.putBlob(ALICE, image, now);
    side.repo.applyWrites(ALICE, [post("p1", image.cid)], now);
    side.repo.applyWrites(ALICE, [del("p1"), post("p2", image.cid)], now + 1);
    expect(unreferencedSince(side, image.cid)).toBeNull();
  });

  it("a batch that fails on a conflict changes no reference", () => {
    const side = open();
    const image = blob(1);
    side.blobs.putBlob(ALICE, image, now);
    side.repo.applyWrites(ALICE, [post("p1")], now);
    expect(side.repo.applyWrites(ALICE, [post("p2", image.cid), post("p1")], now)).toMatchObject({ kind: "exists" });
    expect(unreferencedSince(side, image.cid)).toBe(now);
    expect(side.db.prepare(`SELECT COUNT(*) FROM "RecordBlob"`).pluck().get()).toBe(0);
  });

  it("a blob uploaded after a record already names its CID starts out referenced", () => {
    const side = open();
    const image = blob(1);
    side.repo.applyWrites(ALICE, [post("p1", image.cid)], now);
    side.blobs.putBlob(ALICE, image, now);
    expect(unreferencedSince(side, image.cid)).toBeNull();
  });

  it("uploading an unreferenced blob again restarts its grace period", () => {
    const side = open();
    const image = blob(1);
    side.blobs.putBlob(ALICE, image, now);
    now += GRACE - 1;
    side.blobs.putBlob(ALICE, image, now);
    expect(unreferencedSince(side, image.cid)).toBe(now);
  });

  it("the account's own expired blobs are removed before its quota is checked, however many there are", () => {
    const side = open({ quotaBytes: 100 * SIZE, unreferencedGraceMs: GRACE });
    for (let seed = 1; seed <= 100; seed++) side.blobs.putBlob(ALICE, blob(seed), now);
    now += GRACE;
    expect(side.blobs.putBlob(ALICE, blob(500), now).kind).toBe("stored");
    expect(stored(side)).toEqual([blob(500).cid]);
  });

  it("other accounts' expired blobs go in small batches, so one request's work stays bounded", () => {
    const side = open({ quotaBytes: 100 * SIZE, unreferencedGraceMs: GRACE });
    for (let seed = 1; seed <= 12; seed++) side.blobs.putBlob(BOB, blob(seed), now);
    now += GRACE;
    side.blobs.putBlob(ALICE, blob(100), now);
    expect(stored(side, BOB)).toHaveLength(12 - BLOB_CLEANUP_BATCH);
    side.repo.applyWrites(ALICE, [post("p1")], now);
    expect(stored(side, BOB)).toHaveLength(12 - 2 * BLOB_CLEANUP_BATCH);
  });

  it("references go with their record when the account is deleted", () => {
    const side = open();
    const image = blob(1);
    side.blobs.putBlob(ALICE, image, now);
    side.repo.applyWrites(ALICE, [post("p1", image.cid)], now);
    side.db.prepare(`DELETE FROM "Account" WHERE did = ?`).run(ALICE);
    expect(side.db.prepare(`SELECT COUNT(*) FROM "RecordBlob"`).pluck().get()).toBe(0);
    expect(stored(side)).toEqual([]);
  });
});
