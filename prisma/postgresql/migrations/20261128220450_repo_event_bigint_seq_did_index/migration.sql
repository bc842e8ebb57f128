-- AlterTable: the column and the sequence that numbers it (a SERIAL's sequence is AS integer, stopping at 2^31 - 1;
-- AS bigint moves its maximum to bigint's, docs/decisions/0044). Prisma's diff wrote SET DATA TYPE BIGSERIAL,
-- which is no type PostgreSQL knows.
ALTER TABLE "RepoEvent" ALTER COLUMN "seq" SET DATA TYPE BIGINT;
ALTER SEQUENCE "RepoEvent_seq_seq" AS BIGINT;

-- CreateIndex
CREATE INDEX "RepoEvent_did_idx" ON "RepoEvent"("did");
