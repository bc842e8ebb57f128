-- CreateTable
CREATE TABLE "RepoImport" (
    "id" TEXT NOT NULL,
    "did" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "RepoImport_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "RepoImportBlock" (
    "importId" TEXT NOT NULL,
    "cid" TEXT NOT NULL,
    "content" BYTEA NOT NULL,

    CONSTRAINT "RepoImportBlock_pkey" PRIMARY KEY ("importId","cid")
);

-- CreateTable
CREATE TABLE "RepoImportNode" (
    "importId" TEXT NOT NULL,
    "cid" TEXT NOT NULL,

    CONSTRAINT "RepoImportNode_pkey" PRIMARY KEY ("importId","cid")
);

-- CreateTable
CREATE TABLE "RepoImportRecord" (
    "importId" TEXT NOT NULL,
    "collection" TEXT NOT NULL,
    "rkey" TEXT NOT NULL,
    "cid" TEXT NOT NULL,
    "value" TEXT NOT NULL,

    CONSTRAINT "RepoImportRecord_pkey" PRIMARY KEY ("importId","collection","rkey")
);

-- CreateTable
CREATE TABLE "RepoImportBlobRef" (
    "importId" TEXT NOT NULL,
    "collection" TEXT NOT NULL,
    "rkey" TEXT NOT NULL,
    "blobCid" TEXT NOT NULL,

    CONSTRAINT "RepoImportBlobRef_pkey" PRIMARY KEY ("importId","collection","rkey","blobCid")
);

-- CreateIndex
CREATE INDEX "RepoImport_expiresAt_idx" ON "RepoImport"("expiresAt");

-- CreateIndex
CREATE INDEX "RepoImport_did_idx" ON "RepoImport"("did");

-- CreateIndex
CREATE INDEX "RepoImportRecord_importId_cid_idx" ON "RepoImportRecord"("importId", "cid");

-- AddForeignKey
ALTER TABLE "RepoImport" ADD CONSTRAINT "RepoImport_did_fkey" FOREIGN KEY ("did") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RepoImportBlock" ADD CONSTRAINT "RepoImportBlock_importId_fkey" FOREIGN KEY ("importId") REFERENCES "RepoImport"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RepoImportNode" ADD CONSTRAINT "RepoImportNode_importId_fkey" FOREIGN KEY ("importId") REFERENCES "RepoImport"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RepoImportRecord" ADD CONSTRAINT "RepoImportRecord_importId_fkey" FOREIGN KEY ("importId") REFERENCES "RepoImport"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RepoImportBlobRef" ADD CONSTRAINT "RepoImportBlobRef_importId_fkey" FOREIGN KEY ("importId") REFERENCES "RepoImport"("id") ON DELETE CASCADE ON UPDATE CASCADE;
