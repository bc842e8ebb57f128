-- AlterTable
ALTER TABLE "Account" ADD COLUMN     "lastSignInAt" TIMESTAMP(3),
ADD COLUMN     "takedownRef" TEXT,
ADD COLUMN     "takendownAt" TIMESTAMP(3);

-- AlterTable
ALTER TABLE "Record" ADD COLUMN     "takedownRef" TEXT;

-- AlterTable
ALTER TABLE "Blob" ADD COLUMN     "takedownRef" TEXT;

-- CreateTable
CREATE TABLE "AdminSession" (
    "idHash" TEXT NOT NULL,
    "passwordTag" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "AdminSession_pkey" PRIMARY KEY ("idHash")
);

-- CreateIndex
CREATE INDEX "AdminSession_expiresAt_idx" ON "AdminSession"("expiresAt");
