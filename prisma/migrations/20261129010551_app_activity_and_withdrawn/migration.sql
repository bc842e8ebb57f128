-- CreateTable
CREATE TABLE "AppActivity" (
    "accountDid" TEXT NOT NULL,
    "app" TEXT NOT NULL,
    "dayStart" DATETIME NOT NULL,
    "kind" TEXT NOT NULL,
    "target" TEXT NOT NULL,
    "count" INTEGER NOT NULL,
    "lastAt" DATETIME NOT NULL,

    PRIMARY KEY ("accountDid", "app", "dayStart", "kind", "target"),
    CONSTRAINT "AppActivity_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account" ("did") ON DELETE CASCADE ON UPDATE CASCADE
);

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
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
    "withdrawn" TEXT NOT NULL DEFAULT '',
    CONSTRAINT "Grant_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account" ("did") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_Grant" ("accountDid", "clientId", "clientKeyAlg", "clientKeyId", "clientKeyJkt", "createdAt", "dpopJkt", "endsAt", "expiresAt", "id", "lastUsedAt", "scope") SELECT "accountDid", "clientId", "clientKeyAlg", "clientKeyId", "clientKeyJkt", "createdAt", "dpopJkt", "endsAt", "expiresAt", "id", "lastUsedAt", "scope" FROM "Grant";
DROP TABLE "Grant";
ALTER TABLE "new_Grant" RENAME TO "Grant";
CREATE INDEX "Grant_accountDid_idx" ON "Grant"("accountDid");
CREATE INDEX "Grant_clientId_idx" ON "Grant"("clientId");
CREATE INDEX "Grant_expiresAt_idx" ON "Grant"("expiresAt");
CREATE TABLE "new_AuthorizedClient" (
    "accountDid" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "declined" TEXT NOT NULL DEFAULT '',
    "withdrawn" TEXT NOT NULL DEFAULT '',
    "createdAt" DATETIME NOT NULL,
    "updatedAt" DATETIME NOT NULL,

    PRIMARY KEY ("accountDid", "clientId"),
    CONSTRAINT "AuthorizedClient_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account" ("did") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_AuthorizedClient" ("accountDid", "clientId", "createdAt", "declined", "scope", "updatedAt") SELECT "accountDid", "clientId", "createdAt", "declined", "scope", "updatedAt" FROM "AuthorizedClient";
DROP TABLE "AuthorizedClient";
ALTER TABLE "new_AuthorizedClient" RENAME TO "AuthorizedClient";
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE INDEX "AppActivity_dayStart_idx" ON "AppActivity"("dayStart");
