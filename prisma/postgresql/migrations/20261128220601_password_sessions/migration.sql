-- AlterTable
ALTER TABLE "Account" ADD COLUMN     "emailAuthFactor" BOOLEAN NOT NULL DEFAULT false;

-- CreateTable
CREATE TABLE "AppPassword" (
    "id" TEXT NOT NULL,
    "accountDid" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "passwordHash" TEXT NOT NULL,
    "privileged" BOOLEAN NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "lastUsedAt" TIMESTAMP(3),

    CONSTRAINT "AppPassword_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PasswordSession" (
    "id" TEXT NOT NULL,
    "accountDid" TEXT NOT NULL,
    "appPasswordId" TEXT,
    "scope" TEXT NOT NULL,
    "userAgent" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "lastUsedAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PasswordSession_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PasswordAccessToken" (
    "tokenHash" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PasswordAccessToken_pkey" PRIMARY KEY ("tokenHash")
);

-- CreateTable
CREATE TABLE "PasswordRefreshToken" (
    "tokenHash" TEXT NOT NULL,
    "sessionId" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "usedAt" TIMESTAMP(3),

    CONSTRAINT "PasswordRefreshToken_pkey" PRIMARY KEY ("tokenHash")
);

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

-- AddForeignKey
ALTER TABLE "AppPassword" ADD CONSTRAINT "AppPassword_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PasswordSession" ADD CONSTRAINT "PasswordSession_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PasswordSession" ADD CONSTRAINT "PasswordSession_appPasswordId_fkey" FOREIGN KEY ("appPasswordId") REFERENCES "AppPassword"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PasswordAccessToken" ADD CONSTRAINT "PasswordAccessToken_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "PasswordSession"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PasswordRefreshToken" ADD CONSTRAINT "PasswordRefreshToken_sessionId_fkey" FOREIGN KEY ("sessionId") REFERENCES "PasswordSession"("id") ON DELETE CASCADE ON UPDATE CASCADE;
