-- AlterTable
ALTER TABLE "Blob" ADD COLUMN "unreferencedSince" DATETIME;

-- CreateTable
CREATE TABLE "RecordBlob" (
    "did" TEXT NOT NULL,
    "collection" TEXT NOT NULL,
    "rkey" TEXT NOT NULL,
    "blobCid" TEXT NOT NULL,

    PRIMARY KEY ("did", "collection", "rkey", "blobCid"),
    CONSTRAINT "RecordBlob_did_collection_rkey_fkey" FOREIGN KEY ("did", "collection", "rkey") REFERENCES "Record" ("did", "collection", "rkey") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE INDEX "RecordBlob_did_blobCid_idx" ON "RecordBlob"("did", "blobCid");

-- CreateIndex
CREATE INDEX "Blob_unreferencedSince_idx" ON "Blob"("unreferencedSince");

-- CreateIndex
CREATE INDEX "Blob_did_unreferencedSince_size_idx" ON "Blob"("did", "unreferencedSince", "size");

-- Data: references of the records stored before this migration, found as app/.server/repo/blob-refs.ts finds them
-- in new writes (keep the two in step): any object in the record with "$type": "blob" and a string ref.$link, and
-- any object with a string cid and a string mimeType (the legacy blob form).
INSERT OR IGNORE INTO "RecordBlob" ("did", "collection", "rkey", "blobCid")
SELECT r."did", r."collection", r."rkey", json_extract(node."value", '$.ref."$link"')
FROM "Record" r, json_tree(r."value") node
WHERE node."type" = 'object'
  AND json_extract(node."value", '$."$type"') = 'blob'
  AND json_type(node."value", '$.ref."$link"') = 'text';

INSERT OR IGNORE INTO "RecordBlob" ("did", "collection", "rkey", "blobCid")
SELECT r."did", r."collection", r."rkey", json_extract(node."value", '$.cid')
FROM "Record" r, json_tree(r."value") node
WHERE node."type" = 'object'
  AND json_type(node."value", '$.cid') = 'text'
  AND json_type(node."value", '$.mimeType') = 'text';

-- Blobs that no record references are unreferenced from this migration on: each gets one full grace period
-- (ATRIUM_BLOB_UNREFERENCED_GRACE_SECONDS) after the upgrade before it is deleted (docs/decisions/0008).
UPDATE "Blob" SET "unreferencedSince" = CAST(strftime('%s', 'now') AS INTEGER) * 1000
WHERE NOT EXISTS (SELECT 1 FROM "RecordBlob" rb WHERE rb."did" = "Blob"."did" AND rb."blobCid" = "Blob"."cid");
