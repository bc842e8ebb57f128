-- AlterTable
ALTER TABLE "Account" ADD COLUMN     "signingKeyEncryptedWith" TEXT;

-- CreateIndex
CREATE INDEX "Account_signingKeyEncryptedWith_idx" ON "Account"("signingKeyEncryptedWith");
