-- CreateTable
CREATE TABLE "InviteCode" (
    "code" TEXT NOT NULL PRIMARY KEY,
    "availableUses" INTEGER NOT NULL,
    "usedCount" INTEGER NOT NULL DEFAULT 0,
    "disabled" BOOLEAN NOT NULL DEFAULT false,
    "forAccount" TEXT NOT NULL,
    "createdBy" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "InviteCodeUse" (
    "code" TEXT NOT NULL,
    "usedBy" TEXT NOT NULL,
    "usedAt" DATETIME NOT NULL,

    PRIMARY KEY ("code", "usedBy"),
    CONSTRAINT "InviteCodeUse_code_fkey" FOREIGN KEY ("code") REFERENCES "InviteCode" ("code") ON DELETE CASCADE ON UPDATE CASCADE
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
    "invitesDisabled" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL
);
INSERT INTO "new_Account" ("createdAt", "deactivatedAt", "did", "email", "emailAuthFactor", "emailConfirmedAt", "handle", "passwordHash", "signingKey", "updatedAt") SELECT "createdAt", "deactivatedAt", "did", "email", "emailAuthFactor", "emailConfirmedAt", "handle", "passwordHash", "signingKey", "updatedAt" FROM "Account";
DROP TABLE "Account";
ALTER TABLE "new_Account" RENAME TO "Account";
CREATE UNIQUE INDEX "Account_handle_key" ON "Account"("handle");
CREATE UNIQUE INDEX "Account_email_key" ON "Account"("email");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE INDEX "InviteCode_forAccount_idx" ON "InviteCode"("forAccount");

-- CreateIndex
CREATE INDEX "InviteCode_createdAt_code_idx" ON "InviteCode"("createdAt", "code");

-- CreateIndex
CREATE INDEX "InviteCode_usedCount_code_idx" ON "InviteCode"("usedCount", "code");

-- CreateIndex
CREATE INDEX "InviteCodeUse_usedBy_idx" ON "InviteCodeUse"("usedBy");
