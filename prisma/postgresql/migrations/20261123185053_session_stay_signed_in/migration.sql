-- AlterTable
ALTER TABLE "BrowserSession" ADD COLUMN     "staySignedIn" BOOLEAN NOT NULL DEFAULT false;
