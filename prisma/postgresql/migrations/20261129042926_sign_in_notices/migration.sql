-- AlterTable
ALTER TABLE "Account" ADD COLUMN     "firstBrowserAt" TIMESTAMP(3),
ADD COLUMN     "signInNotices" BOOLEAN NOT NULL DEFAULT true;

-- CreateTable
CREATE TABLE "EndLink" (
    "tokenHash" TEXT NOT NULL,
    "accountDid" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "target" TEXT NOT NULL,
    "label" TEXT NOT NULL,
    "since" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "usedAt" TIMESTAMP(3),

    CONSTRAINT "EndLink_pkey" PRIMARY KEY ("tokenHash")
);

-- CreateIndex
CREATE INDEX "EndLink_accountDid_idx" ON "EndLink"("accountDid");

-- CreateIndex
CREATE INDEX "EndLink_expiresAt_idx" ON "EndLink"("expiresAt");

-- AddForeignKey
ALTER TABLE "EndLink" ADD CONSTRAINT "EndLink_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;

-- docs/decisions/0056: an account a browser has signed in to before has had its first browser; its next new one is told.
UPDATE "Account" SET "firstBrowserAt" = "lastSignInAt" WHERE "lastSignInAt" IS NOT NULL;
