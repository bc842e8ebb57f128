import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

/**
 * The PostgreSQL data model is derived from prisma/schema.prisma, the one
 * schema people edit: Prisma cannot choose a datasource's provider from the
 * environment, so migrations for PostgreSQL are diffed from a copy of the
 * schema whose datasource says "postgresql" (docs/decisions/0015).
 */

const ROOT = path.resolve(import.meta.dirname, "../..");
export const SQLITE_SCHEMA_PATH = path.join(ROOT, "prisma", "schema.prisma");
export const POSTGRES_SCHEMA_PATH = path.join(ROOT, "prisma", "postgresql", "schema.prisma");

const HEADER = `// GENERATED FILE: do not edit. Derived from prisma/schema.prisma by scripts/derive-postgres-schema.ts
// (\`npm run migration:new\` rewrites it; a test fails when it is stale). It is that schema with the datasource's
// provider set to "postgresql" and without any generator block. It exists to diff the PostgreSQL migrations in
// prisma/postgresql/migrations/. DateTime columns are TIMESTAMP(3) there, holding UTC.
// See docs/decisions/0015-postgresql-migrations.md.

`;

/** prisma/schema.prisma's text → the PostgreSQL schema's text. Throws when the source is not the SQLite schema it expects. */
export function derivePostgresSchema(sqliteSchema: string): string {
  const blocks = [...sqliteSchema.matchAll(/^datasource\s+\w+\s*\{[^}]*\}/gm)];
  if (blocks.length !== 1) throw new Error(`expected one datasource block in the schema, found ${blocks.length}`);
  const datasource = blocks[0]![0];
  const provider = /^(\s*provider\s*=\s*)"sqlite"/m;
  if (!provider.test(datasource)) throw new Error(`expected the datasource's provider to be "sqlite":\n${datasource}`);
  const withProvider = sqliteSchema.replace(datasource, datasource.replace(provider, '$1"postgresql"'));
  const withoutGenerators = withProvider.replace(/^generator\s+\w+\s*\{[^}]*\}\n*/gm, "");
  return HEADER + withoutGenerators;
}

/** Writes the derived schema of `sqliteSchemaPath` to `postgresSchemaPath`. */
export function writePostgresSchema(sqliteSchemaPath = SQLITE_SCHEMA_PATH, postgresSchemaPath = POSTGRES_SCHEMA_PATH): void {
  writeFileSync(postgresSchemaPath, derivePostgresSchema(readFileSync(sqliteSchemaPath, "utf8")));
}
