-- AlterTable
ALTER TABLE "Account" ADD COLUMN "lastSignInAt" DATETIME;
ALTER TABLE "Account" ADD COLUMN "takedownRef" TEXT;
ALTER TABLE "Account" ADD COLUMN "takendownAt" DATETIME;

-- AlterTable
ALTER TABLE "Record" ADD COLUMN "takedownRef" TEXT;

-- AlterTable
ALTER TABLE "Blob" ADD COLUMN "takedownRef" TEXT;

-- CreateTable
CREATE TABLE "AdminSession" (
    "idHash" TEXT NOT NULL PRIMARY KEY,
    "passwordTag" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL,
    "expiresAt" DATETIME NOT NULL
);

-- CreateIndex
CREATE INDEX "AdminSession_expiresAt_idx" ON "AdminSession"("expiresAt");
