-- CreateTable
CREATE TABLE "RepoImport" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "did" TEXT NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    CONSTRAINT "RepoImport_did_fkey" FOREIGN KEY ("did") REFERENCES "Account" ("did") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "RepoImportBlock" (
    "importId" TEXT NOT NULL,
    "cid" TEXT NOT NULL,
    "content" BLOB NOT NULL,

    PRIMARY KEY ("importId", "cid"),
    CONSTRAINT "RepoImportBlock_importId_fkey" FOREIGN KEY ("importId") REFERENCES "RepoImport" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "RepoImportNode" (
    "importId" TEXT NOT NULL,
    "cid" TEXT NOT NULL,

    PRIMARY KEY ("importId", "cid"),
    CONSTRAINT "RepoImportNode_importId_fkey" FOREIGN KEY ("importId") REFERENCES "RepoImport" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "RepoImportRecord" (
    "importId" TEXT NOT NULL,
    "collection" TEXT NOT NULL,
    "rkey" TEXT NOT NULL,
    "cid" TEXT NOT NULL,
    "value" TEXT NOT NULL,

    PRIMARY KEY ("importId", "collection", "rkey"),
    CONSTRAINT "RepoImportRecord_importId_fkey" FOREIGN KEY ("importId") REFERENCES "RepoImport" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "RepoImportBlobRef" (
    "importId" TEXT NOT NULL,
    "collection" TEXT NOT NULL,
    "rkey" TEXT NOT NULL,
    "blobCid" TEXT NOT NULL,

    PRIMARY KEY ("importId", "collection", "rkey", "blobCid"),
    CONSTRAINT "RepoImportBlobRef_importId_fkey" FOREIGN KEY ("importId") REFERENCES "RepoImport" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE INDEX "RepoImport_expiresAt_idx" ON "RepoImport"("expiresAt");

-- CreateIndex
CREATE INDEX "RepoImport_did_idx" ON "RepoImport"("did");

-- CreateIndex
CREATE INDEX "RepoImportRecord_importId_cid_idx" ON "RepoImportRecord"("importId", "cid");
