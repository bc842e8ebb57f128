-- RepoEvent.seq stays SQLite's INTEGER PRIMARY KEY AUTOINCREMENT, the table's 64-bit rowid: it is already what the
-- schema's BigInt says. Prisma would redefine the table with "seq" BIGINT NOT NULL PRIMARY KEY, which SQLite does not
-- make a rowid, so it would number nothing (docs/decisions/0044).

-- CreateIndex
CREATE INDEX "RepoEvent_did_idx" ON "RepoEvent"("did");
