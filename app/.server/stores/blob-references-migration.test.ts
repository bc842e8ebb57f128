import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrateSqliteBefore } from "../../../tests/helpers/databases.ts";
import { migrateDatabase } from "../db/migrate.ts";
import { blobCidsIn } from "../repo/blob-refs.ts";

/**
 * docs/decisions/0008: a database written before blob references existed migrates cleanly. The migration finds the
 * references of existing records with SQLite's json_tree; they must be exactly those blobCidsIn finds, or blobs would
 * be deleted under records written before the upgrade. Blobs no record references start one grace period then.
 */
const MIGRATION = "20261123170200_blob_references";
const DID = "did:plc:alice";
const OTHER = "did:plc:bob";
const cid = (name: string) => `bafkrei${name.padEnd(52, "q")}`;
const typed = (name: string) => ({ $type: "blob", ref: { $link: cid(name) }, mimeType: "image/png", size: 3 });
const legacy = (name: string) => ({ cid: cid(name), mimeType: "image/jpeg" });

function nested(depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = i % 2 ? { inner: value } : [value];
  return value;
}

/** Records of shapes blobCidsIn takes, and of shapes it refuses. */
const RECORDS: [string, string, Record<string, unknown>][] = [
  [DID, "images", { text: "two", embed: { images: [{ image: typed("a") }, { image: typed("b") }] } }],
  [DID, "avatar", { avatar: legacy("c"), banner: { ...legacy("d"), extra: 1 } }],
  [DID, "deep", { value: nested(60, typed("e")) }],
  [DID, "twice", { one: typed("a"), two: legacy("a") }],
  [DID, "strong-ref", { subject: { uri: "at://did:plc:x/app.bsky.feed.post/1", cid: cid("f") } }],
  [DID, "not-blobs", { a: { $type: "blob", ref: cid("g") }, b: { $type: "blob", ref: { $link: 7 } }, c: { cid: cid("h"), mimeType: 5 }, d: { ref: { $link: cid("i") } } }],
  [DID, "plain", { text: cid("j") }],
  [OTHER, "theirs", { image: typed("k") }],
];

describe(`migration ${MIGRATION} on a database with records and blobs`, () => {
  let dir: string;
  let db: Database.Database;
  let migratedAt: { before: number; after: number };

  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "atrium-blob-migration-"));
    const file = path.join(dir, "atrium.db");
    migrateSqliteBefore(file, MIGRATION);

    const before = new Database(file);
    for (const did of [DID, OTHER]) {
      before
        .prepare(`INSERT INTO "Account" (did, handle, email, passwordHash, signingKey, createdAt, updatedAt) VALUES (?, ?, ?, 'x', '{}', 0, 0)`)
        .run(did, `${did.slice(8)}.test`, `${did.slice(8)}@example.com`);
    }
    for (const [did, rkey, value] of RECORDS) {
      before
        .prepare(`INSERT INTO "Record" (did, collection, rkey, cid, value, createdAt, updatedAt) VALUES (?, 'app.bsky.feed.post', ?, 'bcid', ?, 0, 0)`)
        .run(did, rkey, JSON.stringify(value));
    }
    for (const [did, name] of [[DID, "a"], [DID, "c"], [DID, "e"], [DID, "f"], [DID, "z"], [OTHER, "k"], [OTHER, "a"]] as const) {
      before
        .prepare(`INSERT INTO "Blob" (did, cid, declaredType, mimeType, size, bytes, createdAt) VALUES (?, ?, 'image/png', 'image/png', 3, x'010203', 0)`)
        .run(did, cid(name));
    }
    before.close();

    const started = Date.now();
    const { applied } = migrateDatabase(file);
    migratedAt = { before: started, after: Date.now() };
    expect(applied).toContain(MIGRATION);
    db = new Database(file);
  });
  afterAll(() => {
    db?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("creates for every existing record exactly the references blobCidsIn finds in new writes", () => {
    for (const [did, rkey, value] of RECORDS) {
      const rows = db.prepare(`SELECT blobCid FROM "RecordBlob" WHERE did = ? AND rkey = ? ORDER BY blobCid`).pluck().all(did, rkey);
      expect({ rkey, refs: rows }).toEqual({ rkey, refs: blobCidsIn(value) });
    }
    // Control: the records above do hold references, so an empty table could not pass.
    expect(db.prepare(`SELECT COUNT(*) FROM "RecordBlob"`).pluck().get()).toBe(7);
  });

  it("keeps referenced blobs referenced and starts the grace period of the others at the upgrade", () => {
    const since = (did: string, name: string) => db.prepare(`SELECT unreferencedSince FROM "Blob" WHERE did = ? AND cid = ?`).pluck().get(did, cid(name));
    for (const [did, name] of [[DID, "a"], [DID, "c"], [DID, "e"], [OTHER, "k"]] as const) expect({ name, since: since(did, name) }).toEqual({ name, since: null });
    // "f" is only named by a strong ref, "z" by nothing; Bob's "a" is referenced by Alice's record, not his.
    for (const [did, name] of [[DID, "f"], [DID, "z"], [OTHER, "a"]] as const) {
      const value = since(did, name) as number;
      expect(value).toBeGreaterThanOrEqual(Math.floor(migratedAt.before / 1000) * 1000);
      expect(value).toBeLessThanOrEqual(migratedAt.after);
    }
  });
});
