/**
 * Writes the PostgreSQL data model derived from the SQLite one (scripts/lib/postgres-schema.ts).
 *
 *   tsx scripts/derive-postgres-schema.ts                       prisma/schema.prisma → prisma/postgresql/schema.prisma
 *   tsx scripts/derive-postgres-schema.ts <input> <output>      any SQLite schema file (new-migration.sh derives the committed one)
 */
import { POSTGRES_SCHEMA_PATH, SQLITE_SCHEMA_PATH, writePostgresSchema } from "./lib/postgres-schema.ts";

const [input = SQLITE_SCHEMA_PATH, output = POSTGRES_SCHEMA_PATH] = process.argv.slice(2);
writePostgresSchema(input, output);
