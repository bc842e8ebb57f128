-- AlterTable
ALTER TABLE "AuthorizationRequest" ADD COLUMN "clientKeyAlg" TEXT;
ALTER TABLE "AuthorizationRequest" ADD COLUMN "clientKeyJkt" TEXT;

-- AlterTable
ALTER TABLE "AuthorizationCode" ADD COLUMN "clientKeyAlg" TEXT;
ALTER TABLE "AuthorizationCode" ADD COLUMN "clientKeyJkt" TEXT;

-- AlterTable
ALTER TABLE "AccessToken" ADD COLUMN "scope" TEXT;

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_Client" (
    "clientId" TEXT NOT NULL PRIMARY KEY,
    "metadata" TEXT NOT NULL,
    "size" INTEGER NOT NULL,
    "fetchedAt" DATETIME NOT NULL,
    "expiresAt" DATETIME NOT NULL
);
-- Hand-edited: cached entries are not copied. They held whole fetched documents; the cache now keeps only what
-- validation kept, and refills itself on the next request of each client.
DROP TABLE "Client";
ALTER TABLE "new_Client" RENAME TO "Client";
CREATE INDEX "Client_expiresAt_idx" ON "Client"("expiresAt");
CREATE INDEX "Client_fetchedAt_idx" ON "Client"("fetchedAt");
CREATE TABLE "new_Grant" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "clientId" TEXT NOT NULL,
    "accountDid" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "dpopJkt" TEXT NOT NULL,
    "clientKeyId" TEXT,
    "clientKeyAlg" TEXT,
    "clientKeyJkt" TEXT,
    "createdAt" DATETIME NOT NULL,
    "lastUsedAt" DATETIME NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    "endsAt" DATETIME NOT NULL,
    CONSTRAINT "Grant_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account" ("did") ON DELETE CASCADE ON UPDATE CASCADE
);
-- Hand-edited: existing grants end at the default absolute lifetime counted from their creation (90 days for public
-- clients, 730 for confidential ones: docs/decisions/0010), and never slide past it.
INSERT INTO "new_Grant" ("accountDid", "clientId", "clientKeyId", "createdAt", "dpopJkt", "expiresAt", "id", "lastUsedAt", "scope", "endsAt")
SELECT "accountDid", "clientId", "clientKeyId", "createdAt", "dpopJkt",
       MIN("expiresAt", "createdAt" + CASE WHEN "clientKeyId" IS NULL THEN 90 ELSE 730 END * 86400000),
       "id", "lastUsedAt", "scope",
       "createdAt" + CASE WHEN "clientKeyId" IS NULL THEN 90 ELSE 730 END * 86400000
FROM "Grant";
DROP TABLE "Grant";
ALTER TABLE "new_Grant" RENAME TO "Grant";
CREATE INDEX "Grant_accountDid_idx" ON "Grant"("accountDid");
CREATE INDEX "Grant_clientId_idx" ON "Grant"("clientId");
CREATE INDEX "Grant_expiresAt_idx" ON "Grant"("expiresAt");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
