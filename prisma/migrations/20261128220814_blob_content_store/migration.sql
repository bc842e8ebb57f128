-- CreateTable
CREATE TABLE "BlobContent" (
    "key" TEXT NOT NULL PRIMARY KEY,
    "cid" TEXT,
    "state" TEXT NOT NULL,
    "dueAt" DATETIME
);

-- CreateTable
CREATE TABLE "BlobChunk" (
    "key" TEXT NOT NULL,
    "index" INTEGER NOT NULL,
    "bytes" BLOB NOT NULL,

    PRIMARY KEY ("key", "index"),
    CONSTRAINT "BlobChunk_key_fkey" FOREIGN KEY ("key") REFERENCES "BlobContent" ("key") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "BlobRelease" (
    "releasedAt" DATETIME NOT NULL,
    "did" TEXT NOT NULL,
    "cid" TEXT NOT NULL,

    PRIMARY KEY ("releasedAt", "did", "cid")
);

-- CreateIndex
CREATE UNIQUE INDEX "BlobContent_cid_key" ON "BlobContent"("cid");

-- CreateIndex
CREATE INDEX "BlobContent_dueAt_idx" ON "BlobContent"("dueAt");

-- CreateIndex
CREATE INDEX "Blob_cid_idx" ON "Blob"("cid");
