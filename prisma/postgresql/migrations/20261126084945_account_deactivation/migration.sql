-- AlterTable
ALTER TABLE "Account" ADD COLUMN     "deactivatedAt" TIMESTAMP(3);
