-- CreateTable
CREATE TABLE "RecoveryCode" (
    "codeHash" TEXT NOT NULL PRIMARY KEY,
    "accountDid" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    "usedAt" DATETIME,
    CONSTRAINT "RecoveryCode_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account" ("did") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE INDEX "RecoveryCode_accountDid_idx" ON "RecoveryCode"("accountDid");

-- CreateIndex
CREATE INDEX "RecoveryCode_expiresAt_idx" ON "RecoveryCode"("expiresAt");
