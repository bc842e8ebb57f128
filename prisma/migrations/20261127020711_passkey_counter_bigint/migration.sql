-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_Passkey" (
    "credentialId" TEXT NOT NULL PRIMARY KEY,
    "accountDid" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "publicKey" BLOB NOT NULL,
    "counter" BIGINT NOT NULL,
    "transports" TEXT,
    "deviceType" TEXT NOT NULL,
    "backedUp" BOOLEAN NOT NULL,
    "createdAt" DATETIME NOT NULL,
    "lastUsedAt" DATETIME,
    CONSTRAINT "Passkey_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account" ("did") ON DELETE CASCADE ON UPDATE CASCADE
);
INSERT INTO "new_Passkey" ("accountDid", "backedUp", "counter", "createdAt", "credentialId", "deviceType", "lastUsedAt", "name", "publicKey", "transports") SELECT "accountDid", "backedUp", "counter", "createdAt", "credentialId", "deviceType", "lastUsedAt", "name", "publicKey", "transports" FROM "Passkey";
DROP TABLE "Passkey";
ALTER TABLE "new_Passkey" RENAME TO "Passkey";
CREATE INDEX "Passkey_accountDid_idx" ON "Passkey"("accountDid");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
