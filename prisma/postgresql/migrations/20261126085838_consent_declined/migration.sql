-- AlterTable
ALTER TABLE "AuthorizedClient" ADD COLUMN     "declined" TEXT NOT NULL DEFAULT '';
