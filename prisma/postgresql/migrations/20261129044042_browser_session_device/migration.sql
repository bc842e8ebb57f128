-- AlterTable
ALTER TABLE "BrowserSession" ADD COLUMN     "deviceHash" TEXT;
