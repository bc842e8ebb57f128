-- AlterTable
ALTER TABLE "Account" ADD COLUMN     "invitesDisabled" BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE "InviteCode" (
    "code" TEXT NOT NULL,
    "availableUses" INTEGER NOT NULL,
    "usedCount" INTEGER NOT NULL DEFAULT 0,
    "disabled" BOOLEAN NOT NULL DEFAULT false,
    "forAccount" TEXT NOT NULL,
    "createdBy" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "InviteCode_pkey" PRIMARY KEY ("code")
);

-- CreateTable
CREATE TABLE "InviteCodeUse" (
    "code" TEXT NOT NULL,
    "usedBy" TEXT NOT NULL,
    "usedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "InviteCodeUse_pkey" PRIMARY KEY ("code","usedBy")
);

-- CreateIndex
CREATE INDEX "InviteCode_forAccount_idx" ON "InviteCode"("forAccount");

-- CreateIndex
CREATE INDEX "InviteCode_createdAt_code_idx" ON "InviteCode"("createdAt", "code");

-- CreateIndex
CREATE INDEX "InviteCode_usedCount_code_idx" ON "InviteCode"("usedCount", "code");

-- CreateIndex
CREATE INDEX "InviteCodeUse_usedBy_idx" ON "InviteCodeUse"("usedBy");

-- AddForeignKey
ALTER TABLE "InviteCodeUse" ADD CONSTRAINT "InviteCodeUse_code_fkey" FOREIGN KEY ("code") REFERENCES "InviteCode"("code") ON DELETE CASCADE ON UPDATE CASCADE;
