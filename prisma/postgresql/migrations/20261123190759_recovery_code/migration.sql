-- CreateTable
CREATE TABLE "RecoveryCode" (
    "codeHash" TEXT NOT NULL,
    "accountDid" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "usedAt" TIMESTAMP(3),

    CONSTRAINT "RecoveryCode_pkey" PRIMARY KEY ("codeHash")
);

-- CreateIndex
CREATE INDEX "RecoveryCode_accountDid_idx" ON "RecoveryCode"("accountDid");

-- CreateIndex
CREATE INDEX "RecoveryCode_expiresAt_idx" ON "RecoveryCode"("expiresAt");

-- AddForeignKey
ALTER TABLE "RecoveryCode" ADD CONSTRAINT "RecoveryCode_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;
