-- CreateTable
CREATE TABLE "InviteCode" (
    "code" TEXT NOT NULL PRIMARY KEY,
    "availableUses" INTEGER NOT NULL,
    "usedCount" INTEGER NOT NULL DEFAULT 0,
    "disabled" BOOLEAN NOT NULL DEFAULT false,
    "forAccount" TEXT NOT NULL,
    "createdBy" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "InviteCodeUse" (
    "code" TEXT NOT NULL,
    "usedBy" TEXT NOT NULL,
    "usedAt" DATETIME NOT NULL,

    PRIMARY KEY ("code", "usedBy"),
    CONSTRAINT "InviteCodeUse_code_fkey" FOREIGN KEY ("code") REFERENCES "InviteCode" ("code") ON DELETE CASCADE ON UPDATE CASCADE
);

-- AlterTable: a constant default, so SQLite adds the column in place (no copy of the table; the columns other
-- migrations added, such as signingKeyEncryptedWith, stay).
ALTER TABLE "Account" ADD COLUMN "invitesDisabled" BOOLEAN NOT NULL DEFAULT false;

-- CreateIndex
CREATE INDEX "InviteCode_forAccount_idx" ON "InviteCode"("forAccount");

-- CreateIndex
CREATE INDEX "InviteCode_createdAt_code_idx" ON "InviteCode"("createdAt", "code");

-- CreateIndex
CREATE INDEX "InviteCode_usedCount_code_idx" ON "InviteCode"("usedCount", "code");

-- CreateIndex
CREATE INDEX "InviteCodeUse_usedBy_idx" ON "InviteCodeUse"("usedBy");
