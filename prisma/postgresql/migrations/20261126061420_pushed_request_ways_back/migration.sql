-- DropIndex
DROP INDEX "AuthorizationRequest_expiresAt_idx";

-- AlterTable
ALTER TABLE "AuthorizationRequest" ADD COLUMN     "purgeAt" TIMESTAMP(3),
ADD COLUMN     "pushedFrom" TEXT,
ADD COLUMN     "shownTo" TEXT,
ADD COLUMN     "wayBack" TEXT,
ALTER COLUMN "parameters" DROP NOT NULL;

-- Rows from before (docs/decisions/0022): an answered request's parameters were already only its way back, which moves
-- to "wayBack" and keeps the day it had; no browser was recorded for any, so none sends a browser back unasked. Any
-- other row is next looked at when it expires, as a new one would be.
UPDATE "AuthorizationRequest" SET
  "purgeAt" = CASE WHEN "consumedAt" IS NULL THEN "expiresAt" ELSE "expiresAt" + INTERVAL '1 day' END,
  "wayBack" = CASE WHEN "consumedAt" IS NOT NULL THEN "parameters" END,
  "parameters" = CASE WHEN "consumedAt" IS NULL THEN "parameters" END;
ALTER TABLE "AuthorizationRequest" ALTER COLUMN "purgeAt" SET NOT NULL;

-- CreateIndex
CREATE INDEX "AuthorizationRequest_purgeAt_idx" ON "AuthorizationRequest"("purgeAt");

-- CreateIndex
CREATE INDEX "AuthorizationRequest_pushedFrom_expiresAt_idx" ON "AuthorizationRequest"("pushedFrom", "expiresAt");
