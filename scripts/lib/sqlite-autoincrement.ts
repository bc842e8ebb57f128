import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

/**
 * Prisma 6.19 writes a `BigInt @id @default(autoincrement())` field for SQLite as `"seq" BIGINT NOT NULL PRIMARY
 * KEY`. SQLite numbers rows only through its rowid, and a column is the rowid only when declared exactly "INTEGER
 * PRIMARY KEY" (SQLite's documentation, "ROWIDs and the INTEGER PRIMARY KEY"): that table would number nothing, and
 * every insert that leaves the key to the database would fail. SQLite's rowid is 64 bits already, so the right column
 * is `INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT` (AUTOINCREMENT: a number is never reused, even after the newest row
 * is deleted). `npm run migration:new` writes SQLite migrations through this, and the drift check
 * (app/.server/db/schema-drift.test.ts) builds its expected SQLite database through it (docs/decisions/0044).
 */

/** The `model.field` of every BigInt primary key that the database numbers, in a Prisma schema's text. */
export function autoincrementBigIntKeys(schema: string): Array<{ model: string; field: string }> {
  const keys: Array<{ model: string; field: string }> = [];
  for (const [, model, body] of schema.matchAll(/^model\s+(\w+)\s*\{([^}]*)\}/gm)) {
    for (const [, field] of body!.matchAll(/^\s*(\w+)\s+BigInt\s[^\n]*@id\b[^\n]*@default\(autoincrement\(\)\)/gm)) keys.push({ model: model!, field: field! });
  }
  return keys;
}

/** A SQLite migration script with each such key's column declared as SQLite's 64-bit rowid. */
export function withSqliteAutoincrement(script: string, schema: string): string {
  let fixed = script;
  for (const { model, field } of autoincrementBigIntKeys(schema)) {
    // In the table's CREATE TABLE (Prisma's table redefinitions name it new_<model>), up to the statement's end.
    const table = new RegExp(`(CREATE TABLE "(?:new_)?${model}" \\([^;]*?)"${field}" BIGINT NOT NULL PRIMARY KEY(?= *[,\\n])`, "g");
    fixed = fixed.replace(table, `$1"${field}" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT`);
  }
  return fixed;
}

// npm run migration:new pipes the SQLite diff through this: `tsx scripts/lib/sqlite-autoincrement.ts <schema>`.
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const schema = readFileSync(process.argv[2] ?? "prisma/schema.prisma", "utf8");
  process.stdout.write(withSqliteAutoincrement(readFileSync(0, "utf8"), schema));
}
