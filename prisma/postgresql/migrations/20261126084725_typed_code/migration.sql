-- CreateTable
CREATE TABLE "TypedCode" (
    "accountDid" TEXT NOT NULL,
    "purpose" TEXT NOT NULL,
    "codeHash" TEXT NOT NULL,
    "detail" TEXT,
    "guesses" INTEGER NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "TypedCode_pkey" PRIMARY KEY ("accountDid","purpose")
);

-- CreateIndex
CREATE INDEX "TypedCode_expiresAt_idx" ON "TypedCode"("expiresAt");

-- AddForeignKey
ALTER TABLE "TypedCode" ADD CONSTRAINT "TypedCode_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;
