import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { generateRowTypes, parseModels, ROW_TYPES_PATH } from "../../../scripts/lib/row-types.ts";

/** rows.generated.ts is written from prisma/schema.prisma (docs/decisions/0034): a schema change without `npm run db:types` fails here. */
describe("the generated row types", () => {
  it("are what the generator writes from the schema now", () => {
    expect(readFileSync(ROW_TYPES_PATH, "utf8")).toBe(generateRowTypes());
  });
});

const model = (body: string) => `datasource db {\n  provider = "sqlite"\n  url = env("DATABASE_URL")\n}\n\nmodel Thing {\n${body}\n}\n`;

describe("the schema reader", () => {
  it("reads each scalar column's kind and nullability, and skips relation fields and comments", () => {
    const schema = `${model(`  /// the id
  id    String @id // a comment with "quotes"
  n     Int    @default(0)
  wide  BigInt
  on    Boolean @default(false)
  at    DateTime? @updatedAt
  raw   Bytes
  ratio Float
  owner Owner  @relation(fields: [ownerId], references: [id], onDelete: Cascade)
  ownerId String
  @@index([ownerId, at])`)}\nmodel Owner {\n  id String @id\n  things Thing[]\n}\n`;
    expect(parseModels(schema)).toEqual([
      {
        name: "Thing",
        columns: [
          { name: "id", kind: "string", nullable: false },
          { name: "n", kind: "integer", nullable: false },
          { name: "wide", kind: "integer", nullable: false },
          { name: "on", kind: "boolean", nullable: false },
          { name: "at", kind: "time", nullable: true },
          { name: "raw", kind: "bytes", nullable: false },
          { name: "ratio", kind: "float", nullable: false },
          { name: "ownerId", kind: "string", nullable: false },
        ],
      },
      { name: "Owner", columns: [{ name: "id", kind: "string", nullable: false }] },
    ]);
  });

  it.each([
    ["a column mapped to another name", `  id String @id @map("thing_id")`, /@map/],
    ["a native type", `  id String @id @db.Text`, /@db.Text/],
    ["a table mapped to another name", `  id String @id\n  @@map("things")`, /@map/],
    ["a Decimal column", `  id Decimal @id`, /Decimal columns are not delivered/],
    ["a Json column", `  id Json`, /Json columns/],
    ["an unknown type", `  id Strin @id`, /unknown type Strin/],
    ["a list", `  ids String[]`, /list columns/],
    ["something that is not a field", `  id: String`, /expected a field/],
  ])("refuses %s, naming the line", (_, body, problem) => {
    expect(() => parseModels(model(body))).toThrow(problem);
    expect(() => parseModels(model(body))).toThrow(/prisma\/schema\.prisma:\d+/);
  });

  it("refuses blocks it does not know", () => {
    expect(() => parseModels(`enum Role {\n  ADMIN\n}\n`)).toThrow(/enum blocks are not understood/);
    expect(() => parseModels(`model Thing {\n  id String @id\n`)).toThrow(/not closed/);
  });
});
