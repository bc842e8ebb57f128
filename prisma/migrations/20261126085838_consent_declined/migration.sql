-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_AuthorizedClient" (
    "accountDid" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "declined" TEXT NOT NULL DEFAULT '',
    "createdAt" DATETIME NOT NULL,
    "updatedAt" DATETIME NOT NULL,

    PRIMARY KEY ("accountDid", "clientId"),
    CONSTRAINT "AuthorizedClient_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account" ("did") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_AuthorizedClient" ("accountDid", "clientId", "createdAt", "scope", "updatedAt") SELECT "accountDid", "clientId", "createdAt", "scope", "updatedAt" FROM "AuthorizedClient";
DROP TABLE "AuthorizedClient";
ALTER TABLE "new_AuthorizedClient" RENAME TO "AuthorizedClient";
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
