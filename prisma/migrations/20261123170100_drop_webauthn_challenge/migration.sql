-- DropTable
PRAGMA foreign_keys=off;
DROP TABLE "WebAuthnChallenge";
PRAGMA foreign_keys=on;
