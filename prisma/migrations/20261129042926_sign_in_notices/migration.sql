-- CreateTable
CREATE TABLE "EndLink" (
    "tokenHash" TEXT NOT NULL PRIMARY KEY,
    "accountDid" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "target" TEXT NOT NULL,
    "label" TEXT NOT NULL,
    "since" DATETIME,
    "createdAt" DATETIME NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    "usedAt" DATETIME,
    CONSTRAINT "EndLink_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account" ("did") ON DELETE CASCADE ON UPDATE CASCADE
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
    "signingKeyEncryptedWith" TEXT,
    "deactivatedAt" DATETIME,
    "takendownAt" DATETIME,
    "takedownRef" TEXT,
    "lastSignInAt" DATETIME,
    "emailAuthFactor" BOOLEAN NOT NULL DEFAULT false,
    "invitesDisabled" BOOLEAN NOT NULL DEFAULT false,
    "signInNotices" BOOLEAN NOT NULL DEFAULT true,
    "firstBrowserAt" DATETIME,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL
);
INSERT INTO "new_Account" ("createdAt", "deactivatedAt", "did", "email", "emailAuthFactor", "emailConfirmedAt", "handle", "invitesDisabled", "lastSignInAt", "passwordHash", "signingKey", "signingKeyEncryptedWith", "takedownRef", "takendownAt", "updatedAt") SELECT "createdAt", "deactivatedAt", "did", "email", "emailAuthFactor", "emailConfirmedAt", "handle", "invitesDisabled", "lastSignInAt", "passwordHash", "signingKey", "signingKeyEncryptedWith", "takedownRef", "takendownAt", "updatedAt" FROM "Account";
DROP TABLE "Account";
ALTER TABLE "new_Account" RENAME TO "Account";
CREATE UNIQUE INDEX "Account_handle_key" ON "Account"("handle");
CREATE UNIQUE INDEX "Account_email_key" ON "Account"("email");
CREATE INDEX "Account_signingKeyEncryptedWith_idx" ON "Account"("signingKeyEncryptedWith");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE INDEX "EndLink_accountDid_idx" ON "EndLink"("accountDid");

-- CreateIndex
CREATE INDEX "EndLink_expiresAt_idx" ON "EndLink"("expiresAt");

-- docs/decisions/0056: an account a browser has signed in to before has had its first browser; its next new one is told.
UPDATE "Account" SET "firstBrowserAt" = "lastSignInAt" WHERE "lastSignInAt" IS NOT NULL;
