-- AlterTable
ALTER TABLE "BrowserSession" ADD COLUMN "authenticatedAt" DATETIME;
