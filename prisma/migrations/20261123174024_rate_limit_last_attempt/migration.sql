-- AlterTable
ALTER TABLE "RateLimit" ADD COLUMN "lastAttemptAt" DATETIME;
