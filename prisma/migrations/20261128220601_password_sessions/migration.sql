-- CreateTable
CREATE TABLE "AppPassword" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "accountDid" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "passwordHash" TEXT NOT NULL,
    "privileged" BOOLEAN NOT NULL,
    "createdAt" DATETIME NOT NULL,
    "lastUsedAt" DATETIME,
    CONSTRAINT "AppPassword_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account" ("did") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "PasswordSession" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "accountDid" TEXT NOT NULL,
    "appPasswordId" TEXT,
    "scope" TEXT NOT NULL,
    "userAgent" TEXT,
    "createdAt" DATETIME NOT NULL,
    "lastUsedAt" DATETIME NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    CONSTRAINT "PasswordSession_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account" ("did") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "PasswordSession_appPasswordId_fkey" FOREIGN KEY ("appPasswordId") REFERENCES "AppPassword" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "PasswordAccessToken" (
    "tokenHash" TEXT NOT NULL PRIMARY KEY,
    "sessionId" TEXT NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    CONSTRAINT "PasswordAccessToken_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "PasswordSession" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateTable
CREATE TABLE "PasswordRefreshToken" (
    "tokenHash" TEXT NOT NULL PRIMARY KEY,
    "sessionId" TEXT NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    "usedAt" DATETIME,
    CONSTRAINT "PasswordRefreshToken_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "PasswordSession" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_Account" (
    "did" TEXT NOT NULL PRIMARY KEY,
    "handle" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "passwordHash" TEXT NOT NULL,
    "emailConfirmedAt" DATETIME,
    "signingKey" TEXT NOT NULL,
    "deactivatedAt" DATETIME,
    "emailAuthFactor" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL
);
INSERT INTO "new_Account" ("createdAt", "deactivatedAt", "did", "email", "emailConfirmedAt", "handle", "passwordHash", "signingKey", "updatedAt") SELECT "createdAt", "deactivatedAt", "did", "email", "emailConfirmedAt", "handle", "passwordHash", "signingKey", "updatedAt" FROM "Account";
DROP TABLE "Account";
ALTER TABLE "new_Account" RENAME TO "Account";
CREATE UNIQUE INDEX "Account_handle_key" ON "Account"("handle");
CREATE UNIQUE INDEX "Account_email_key" ON "Account"("email");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE UNIQUE INDEX "AppPassword_accountDid_name_key" ON "AppPassword"("accountDid", "name");

-- CreateIndex
CREATE UNIQUE INDEX "AppPassword_accountDid_passwordHash_key" ON "AppPassword"("accountDid", "passwordHash");

-- CreateIndex
CREATE INDEX "PasswordSession_accountDid_idx" ON "PasswordSession"("accountDid");

-- CreateIndex
CREATE INDEX "PasswordSession_appPasswordId_idx" ON "PasswordSession"("appPasswordId");

-- CreateIndex
CREATE INDEX "PasswordSession_expiresAt_idx" ON "PasswordSession"("expiresAt");

-- CreateIndex
CREATE INDEX "PasswordAccessToken_sessionId_idx" ON "PasswordAccessToken"("sessionId");

-- CreateIndex
CREATE INDEX "PasswordAccessToken_expiresAt_idx" ON "PasswordAccessToken"("expiresAt");

-- CreateIndex
CREATE INDEX "PasswordRefreshToken_sessionId_idx" ON "PasswordRefreshToken"("sessionId");

-- CreateIndex
CREATE INDEX "PasswordRefreshToken_expiresAt_idx" ON "PasswordRefreshToken"("expiresAt");
