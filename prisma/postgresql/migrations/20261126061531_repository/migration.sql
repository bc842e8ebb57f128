-- AlterTable
ALTER TABLE "Record" ADD COLUMN     "repoRev" TEXT;

-- CreateTable
CREATE TABLE "RepoRoot" (
    "did" TEXT NOT NULL,
    "cid" TEXT NOT NULL,
    "rev" TEXT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "RepoRoot_pkey" PRIMARY KEY ("did")
);

-- CreateTable
CREATE TABLE "RepoBlock" (
    "did" TEXT NOT NULL,
    "cid" TEXT NOT NULL,
    "repoRev" TEXT NOT NULL,
    "content" BYTEA NOT NULL,

    CONSTRAINT "RepoBlock_pkey" PRIMARY KEY ("did","cid")
);

-- CreateTable
CREATE TABLE "RepoEvent" (
    "seq" SERIAL NOT NULL,
    "did" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "body" BYTEA NOT NULL,
    "time" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "RepoEvent_pkey" PRIMARY KEY ("seq")
);

-- CreateIndex
CREATE INDEX "RepoBlock_did_repoRev_idx" ON "RepoBlock"("did", "repoRev");

-- CreateIndex
CREATE INDEX "RepoEvent_time_idx" ON "RepoEvent"("time");

-- CreateIndex
CREATE INDEX "Record_did_repoRev_idx" ON "Record"("did", "repoRev");

-- CreateIndex
CREATE INDEX "Record_did_cid_idx" ON "Record"("did", "cid");

-- AddForeignKey
ALTER TABLE "RepoRoot" ADD CONSTRAINT "RepoRoot_did_fkey" FOREIGN KEY ("did") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RepoBlock" ADD CONSTRAINT "RepoBlock_did_fkey" FOREIGN KEY ("did") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;
