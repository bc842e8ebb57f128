-- CreateTable
CREATE TABLE "Account" (
    "did" TEXT NOT NULL,
    "handle" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "passwordHash" TEXT NOT NULL,
    "emailConfirmedAt" TIMESTAMP(3),
    "signingKey" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Account_pkey" PRIMARY KEY ("did")
);

-- CreateTable
CREATE TABLE "BrowserSession" (
    "idHash" TEXT NOT NULL,
    "accountDid" TEXT NOT NULL,
    "userAgent" TEXT,
    "ipAddress" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastSeenAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "authenticatedAt" TIMESTAMP(3),

    CONSTRAINT "BrowserSession_pkey" PRIMARY KEY ("idHash")
);

-- CreateTable
CREATE TABLE "Client" (
    "clientId" TEXT NOT NULL,
    "metadata" TEXT NOT NULL,
    "size" INTEGER NOT NULL,
    "fetchedAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Client_pkey" PRIMARY KEY ("clientId")
);

-- CreateTable
CREATE TABLE "AuthorizationRequest" (
    "idHash" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "parameters" TEXT NOT NULL,
    "dpopJkt" TEXT NOT NULL,
    "clientKeyId" TEXT,
    "clientKeyAlg" TEXT,
    "clientKeyJkt" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "consumedAt" TIMESTAMP(3),

    CONSTRAINT "AuthorizationRequest_pkey" PRIMARY KEY ("idHash")
);

-- CreateTable
CREATE TABLE "AuthorizationCode" (
    "codeHash" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "accountDid" TEXT NOT NULL,
    "redirectUri" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "codeChallenge" TEXT NOT NULL,
    "dpopJkt" TEXT NOT NULL,
    "clientKeyId" TEXT,
    "clientKeyAlg" TEXT,
    "clientKeyJkt" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "usedAt" TIMESTAMP(3),
    "grantId" TEXT,

    CONSTRAINT "AuthorizationCode_pkey" PRIMARY KEY ("codeHash")
);

-- CreateTable
CREATE TABLE "Grant" (
    "id" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "accountDid" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "dpopJkt" TEXT NOT NULL,
    "clientKeyId" TEXT,
    "clientKeyAlg" TEXT,
    "clientKeyJkt" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "lastUsedAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "endsAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Grant_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AccessToken" (
    "tokenHash" TEXT NOT NULL,
    "grantId" TEXT NOT NULL,
    "scope" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "AccessToken_pkey" PRIMARY KEY ("tokenHash")
);

-- CreateTable
CREATE TABLE "RefreshToken" (
    "tokenHash" TEXT NOT NULL,
    "grantId" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "usedAt" TIMESTAMP(3),

    CONSTRAINT "RefreshToken_pkey" PRIMARY KEY ("tokenHash")
);

-- CreateTable
CREATE TABLE "ReplayRecord" (
    "key" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ReplayRecord_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "ServerSecret" (
    "name" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ServerSecret_pkey" PRIMARY KEY ("name")
);

-- CreateTable
CREATE TABLE "Record" (
    "did" TEXT NOT NULL,
    "collection" TEXT NOT NULL,
    "rkey" TEXT NOT NULL,
    "cid" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Record_pkey" PRIMARY KEY ("did","collection","rkey")
);

-- CreateTable
CREATE TABLE "Blob" (
    "did" TEXT NOT NULL,
    "cid" TEXT NOT NULL,
    "declaredType" TEXT NOT NULL,
    "detectedType" TEXT,
    "mimeType" TEXT NOT NULL,
    "size" INTEGER NOT NULL,
    "bytes" BYTEA NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "unreferencedSince" TIMESTAMP(3),

    CONSTRAINT "Blob_pkey" PRIMARY KEY ("did","cid")
);

-- CreateTable
CREATE TABLE "RecordBlob" (
    "did" TEXT NOT NULL,
    "collection" TEXT NOT NULL,
    "rkey" TEXT NOT NULL,
    "blobCid" TEXT NOT NULL,

    CONSTRAINT "RecordBlob_pkey" PRIMARY KEY ("did","collection","rkey","blobCid")
);

-- CreateTable
CREATE TABLE "Preferences" (
    "did" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Preferences_pkey" PRIMARY KEY ("did")
);

-- CreateTable
CREATE TABLE "PermissionSetCache" (
    "nsid" TEXT NOT NULL,
    "document" TEXT NOT NULL,
    "fetchedAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PermissionSetCache_pkey" PRIMARY KEY ("nsid")
);

-- CreateTable
CREATE TABLE "Passkey" (
    "credentialId" TEXT NOT NULL,
    "accountDid" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "publicKey" BYTEA NOT NULL,
    "counter" INTEGER NOT NULL,
    "transports" TEXT,
    "deviceType" TEXT NOT NULL,
    "backedUp" BOOLEAN NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "lastUsedAt" TIMESTAMP(3),

    CONSTRAINT "Passkey_pkey" PRIMARY KEY ("credentialId")
);

-- CreateTable
CREATE TABLE "AuthorizedClient" (
    "accountDid" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "scope" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "AuthorizedClient_pkey" PRIMARY KEY ("accountDid","clientId")
);

-- CreateTable
CREATE TABLE "RateLimit" (
    "key" TEXT NOT NULL,
    "count" INTEGER NOT NULL,
    "windowEndsAt" TIMESTAMP(3) NOT NULL,
    "lastAttemptAt" TIMESTAMP(3),

    CONSTRAINT "RateLimit_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE UNIQUE INDEX "Account_handle_key" ON "Account"("handle");

-- CreateIndex
CREATE UNIQUE INDEX "Account_email_key" ON "Account"("email");

-- CreateIndex
CREATE INDEX "BrowserSession_accountDid_idx" ON "BrowserSession"("accountDid");

-- CreateIndex
CREATE INDEX "BrowserSession_expiresAt_idx" ON "BrowserSession"("expiresAt");

-- CreateIndex
CREATE INDEX "Client_expiresAt_idx" ON "Client"("expiresAt");

-- CreateIndex
CREATE INDEX "Client_fetchedAt_idx" ON "Client"("fetchedAt");

-- CreateIndex
CREATE INDEX "AuthorizationRequest_expiresAt_idx" ON "AuthorizationRequest"("expiresAt");

-- CreateIndex
CREATE INDEX "AuthorizationCode_expiresAt_idx" ON "AuthorizationCode"("expiresAt");

-- CreateIndex
CREATE INDEX "Grant_accountDid_idx" ON "Grant"("accountDid");

-- CreateIndex
CREATE INDEX "Grant_clientId_idx" ON "Grant"("clientId");

-- CreateIndex
CREATE INDEX "Grant_expiresAt_idx" ON "Grant"("expiresAt");

-- CreateIndex
CREATE INDEX "AccessToken_grantId_idx" ON "AccessToken"("grantId");

-- CreateIndex
CREATE INDEX "AccessToken_expiresAt_idx" ON "AccessToken"("expiresAt");

-- CreateIndex
CREATE INDEX "RefreshToken_grantId_idx" ON "RefreshToken"("grantId");

-- CreateIndex
CREATE INDEX "RefreshToken_expiresAt_idx" ON "RefreshToken"("expiresAt");

-- CreateIndex
CREATE INDEX "ReplayRecord_expiresAt_idx" ON "ReplayRecord"("expiresAt");

-- CreateIndex
CREATE INDEX "Blob_unreferencedSince_idx" ON "Blob"("unreferencedSince");

-- CreateIndex
CREATE INDEX "Blob_did_unreferencedSince_size_idx" ON "Blob"("did", "unreferencedSince", "size");

-- CreateIndex
CREATE INDEX "RecordBlob_did_blobCid_idx" ON "RecordBlob"("did", "blobCid");

-- CreateIndex
CREATE INDEX "PermissionSetCache_expiresAt_idx" ON "PermissionSetCache"("expiresAt");

-- CreateIndex
CREATE INDEX "Passkey_accountDid_idx" ON "Passkey"("accountDid");

-- CreateIndex
CREATE INDEX "RateLimit_windowEndsAt_idx" ON "RateLimit"("windowEndsAt");

-- AddForeignKey
ALTER TABLE "BrowserSession" ADD CONSTRAINT "BrowserSession_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "AuthorizationCode" ADD CONSTRAINT "AuthorizationCode_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Grant" ADD CONSTRAINT "Grant_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "AccessToken" ADD CONSTRAINT "AccessToken_grantId_fkey" FOREIGN KEY ("grantId") REFERENCES "Grant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RefreshToken" ADD CONSTRAINT "RefreshToken_grantId_fkey" FOREIGN KEY ("grantId") REFERENCES "Grant"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Record" ADD CONSTRAINT "Record_did_fkey" FOREIGN KEY ("did") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Blob" ADD CONSTRAINT "Blob_did_fkey" FOREIGN KEY ("did") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "RecordBlob" ADD CONSTRAINT "RecordBlob_did_collection_rkey_fkey" FOREIGN KEY ("did", "collection", "rkey") REFERENCES "Record"("did", "collection", "rkey") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Preferences" ADD CONSTRAINT "Preferences_did_fkey" FOREIGN KEY ("did") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Passkey" ADD CONSTRAINT "Passkey_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "AuthorizedClient" ADD CONSTRAINT "AuthorizedClient_accountDid_fkey" FOREIGN KEY ("accountDid") REFERENCES "Account"("did") ON DELETE CASCADE ON UPDATE CASCADE;

