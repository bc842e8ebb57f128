-- CreateTable
CREATE TABLE "TypedCode" (
    "accountDid" TEXT NOT NULL,
    "purpose" TEXT NOT NULL,
    "codeHash" TEXT NOT NULL,
    "detail" TEXT,
    "guesses" INTEGER NOT NULL DEFAULT 0,
    "createdAt" DATETIME NOT NULL,
    "expiresAt" DATETIME NOT NULL,

    PRIMARY KEY ("accountDid", "purpose"),
    CONSTRAINT "TypedCode_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account" ("did") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE INDEX "TypedCode_expiresAt_idx" ON "TypedCode"("expiresAt");
