-- AlterTable
ALTER TABLE "Account" ADD COLUMN "deactivatedAt" DATETIME;
