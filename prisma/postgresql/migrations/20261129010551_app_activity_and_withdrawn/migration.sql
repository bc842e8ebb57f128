-- AlterTable
ALTER TABLE "Grant" ADD COLUMN     "withdrawn" TEXT NOT NULL DEFAULT '';

-- AlterTable
ALTER TABLE "AuthorizedClient" ADD COLUMN     "withdrawn" TEXT NOT NULL DEFAULT '';

-- CreateTable
CREATE TABLE "AppActivity" (
    "accountDid" TEXT NOT NULL,
    "app" TEXT NOT NULL,
    "dayStart" TIMESTAMP(3) NOT NULL,
    "kind" TEXT NOT NULL,
    "target" TEXT NOT NULL,
    "count" INTEGER NOT NULL,
    "lastAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "AppActivity_pkey" PRIMARY KEY ("accountDid","app","dayStart","kind","target")
);

-- CreateIndex
CREATE INDEX "AppActivity_dayStart_idx" ON "AppActivity"("dayStart");

-- AddForeignKey
ALTER TABLE "AppActivity" ADD CONSTRAINT "AppActivity_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;
