import { describe, expect, it } from "vitest";
import { autoincrementBigIntKeys, withSqliteAutoincrement } from "./sqlite-autoincrement.ts";

const SCHEMA = `model RepoEvent {
  /// numbered by the database
  seq  BigInt   @id @default(autoincrement())
  did  String
}

model Passkey {
  credentialId String @id
  counter      BigInt
}
`;

/** What Prisma 6.19 writes for the schema above: a table redefinition and a fresh table. */
const PRISMA_SCRIPT = `CREATE TABLE "new_RepoEvent" (
    "seq" BIGINT NOT NULL PRIMARY KEY,
    "did" TEXT NOT NULL
);
CREATE TABLE "Passkey" (
    "credentialId" TEXT NOT NULL PRIMARY KEY,
    "counter" BIGINT NOT NULL
);
CREATE TABLE "RepoEvent" (
    "seq" BIGINT NOT NULL PRIMARY KEY,
    "did" TEXT NOT NULL
);`;

describe("a BigInt key the database numbers, on SQLite (docs/decisions/0044)", () => {
  it("finds the schema's autoincrement BigInt keys, and only those", () => {
    expect(autoincrementBigIntKeys(SCHEMA)).toEqual([{ model: "RepoEvent", field: "seq" }]);
  });

  it("declares each as SQLite's rowid in every CREATE TABLE of its model, and leaves other BIGINT columns alone", () => {
    const fixed = withSqliteAutoincrement(PRISMA_SCRIPT, SCHEMA);
    expect(fixed.match(/"seq" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,/g)).toHaveLength(2);
    expect(fixed).not.toContain('"seq" BIGINT');
    expect(fixed).toContain('"counter" BIGINT NOT NULL');
  });
});
