-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_BrowserSession" (
    "idHash" TEXT NOT NULL PRIMARY KEY,
    "accountDid" TEXT NOT NULL,
    "userAgent" TEXT,
    "ipAddress" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastSeenAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" DATETIME NOT NULL,
    "authenticatedAt" DATETIME,
    "staySignedIn" BOOLEAN NOT NULL DEFAULT false,
    CONSTRAINT "BrowserSession_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account" ("did") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_BrowserSession" ("accountDid", "authenticatedAt", "createdAt", "expiresAt", "idHash", "ipAddress", "lastSeenAt", "userAgent") SELECT "accountDid", "authenticatedAt", "createdAt", "expiresAt", "idHash", "ipAddress", "lastSeenAt", "userAgent" FROM "BrowserSession";
DROP TABLE "BrowserSession";
ALTER TABLE "new_BrowserSession" RENAME TO "BrowserSession";
CREATE INDEX "BrowserSession_accountDid_idx" ON "BrowserSession"("accountDid");
CREATE INDEX "BrowserSession_expiresAt_idx" ON "BrowserSession"("expiresAt");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
