-- AlterTable
ALTER TABLE "Record" ADD COLUMN "repoRev" TEXT;

-- CreateTable
CREATE TABLE "RepoRoot" (
    "did" TEXT NOT NULL PRIMARY KEY,
    "cid" TEXT NOT NULL,
    "rev" TEXT NOT NULL,
    "updatedAt" DATETIME NOT NULL,
    CONSTRAINT "RepoRoot_did_fkey" FOREIGN KEY ("did") REFERENCES "Account" ("did") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "RepoBlock" (
    "did" TEXT NOT NULL,
    "cid" TEXT NOT NULL,
    "repoRev" TEXT NOT NULL,
    "content" BLOB NOT NULL,

    PRIMARY KEY ("did", "cid"),
    CONSTRAINT "RepoBlock_did_fkey" FOREIGN KEY ("did") REFERENCES "Account" ("did") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "RepoEvent" (
    "seq" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    "did" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "body" BLOB NOT NULL,
    "time" DATETIME NOT NULL
);

-- CreateIndex
CREATE INDEX "RepoBlock_did_repoRev_idx" ON "RepoBlock"("did", "repoRev");

-- CreateIndex
CREATE INDEX "RepoEvent_time_idx" ON "RepoEvent"("time");

-- CreateIndex
CREATE INDEX "Record_did_repoRev_idx" ON "Record"("did", "repoRev");

-- CreateIndex
CREATE INDEX "Record_did_cid_idx" ON "Record"("did", "cid");
