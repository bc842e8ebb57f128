-- CreateTable
CREATE TABLE "BlobContent" (
    "key" TEXT NOT NULL,
    "cid" TEXT,
    "state" TEXT NOT NULL,
    "dueAt" TIMESTAMP(3),

    CONSTRAINT "BlobContent_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "BlobChunk" (
    "key" TEXT NOT NULL,
    "index" INTEGER NOT NULL,
    "bytes" BYTEA NOT NULL,

    CONSTRAINT "BlobChunk_pkey" PRIMARY KEY ("key","index")
);

-- CreateTable
CREATE TABLE "BlobRelease" (
    "releasedAt" TIMESTAMP(3) NOT NULL,
    "did" TEXT NOT NULL,
    "cid" TEXT NOT NULL,

    CONSTRAINT "BlobRelease_pkey" PRIMARY KEY ("releasedAt","did","cid")
);

-- CreateIndex
CREATE UNIQUE INDEX "BlobContent_cid_key" ON "BlobContent"("cid");

-- CreateIndex
CREATE INDEX "BlobContent_dueAt_idx" ON "BlobContent"("dueAt");

-- CreateIndex
CREATE INDEX "Blob_cid_idx" ON "Blob"("cid");

-- AddForeignKey
ALTER TABLE "BlobChunk" ADD CONSTRAINT "BlobChunk_key_fkey" FOREIGN KEY ("key") REFERENCES "BlobContent"("key") ON DELETE CASCADE ON UPDATE CASCADE;
