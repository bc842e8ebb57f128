-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_AuthorizationRequest" (
    "idHash" TEXT NOT NULL PRIMARY KEY,
    "clientId" TEXT NOT NULL,
    "parameters" TEXT,
    "wayBack" TEXT,
    "shownTo" TEXT,
    "pushedFrom" TEXT,
    "dpopJkt" TEXT NOT NULL,
    "clientKeyId" TEXT,
    "clientKeyAlg" TEXT,
    "clientKeyJkt" TEXT,
    "createdAt" DATETIME NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    "purgeAt" DATETIME NOT NULL,
    "consumedAt" DATETIME
);
-- Rows from before (docs/decisions/0022): an answered request's parameters were already only its way back, which moves
-- to "wayBack" and keeps the day it had; no browser was recorded for any, so none sends a browser back unasked. Any
-- other row is next looked at when it expires, as a new one would be.
INSERT INTO "new_AuthorizationRequest" ("clientId", "clientKeyAlg", "clientKeyId", "clientKeyJkt", "consumedAt", "createdAt", "dpopJkt", "expiresAt", "idHash", "parameters", "wayBack", "purgeAt")
SELECT "clientId", "clientKeyAlg", "clientKeyId", "clientKeyJkt", "consumedAt", "createdAt", "dpopJkt", "expiresAt", "idHash",
    CASE WHEN "consumedAt" IS NULL THEN "parameters" END, CASE WHEN "consumedAt" IS NOT NULL THEN "parameters" END,
    CASE WHEN "consumedAt" IS NULL THEN "expiresAt" ELSE "expiresAt" + 86400000 END
FROM "AuthorizationRequest";
DROP TABLE "AuthorizationRequest";
ALTER TABLE "new_AuthorizationRequest" RENAME TO "AuthorizationRequest";
CREATE INDEX "AuthorizationRequest_purgeAt_idx" ON "AuthorizationRequest"("purgeAt");
CREATE INDEX "AuthorizationRequest_pushedFrom_expiresAt_idx" ON "AuthorizationRequest"("pushedFrom", "expiresAt");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
