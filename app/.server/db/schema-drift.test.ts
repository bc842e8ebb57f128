import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { derivePostgresSchema, POSTGRES_SCHEMA_PATH, SQLITE_SCHEMA_PATH } from "../../../scripts/lib/postgres-schema.ts";
import { PROJECT_ROOT } from "../../../scripts/lib/server-process.ts";
import { withSqliteAutoincrement } from "../../../scripts/lib/sqlite-autoincrement.ts";
import { createTestDatabase, dropTestDatabase, withClient } from "../../../tests/helpers/postgres.ts";
import { defaultPostgresMigrationsDir, migratePostgres } from "./migrate-postgres.ts";
import { defaultMigrationsDir, migrateDatabase } from "./migrate.ts";

const run = promisify(execFile);
const PRISMA_CLI = path.join(PROJECT_ROOT, "node_modules", "prisma", "build", "index.js");

/**
 * The drift check (docs/decisions/0015): a change to prisma/schema.prisma
 * without its migrations fails here. For each engine, the database the
 * migrations build is compared, catalog against catalog, with the one Prisma
 * would create from the schema as it is now (`prisma migrate diff
 * --from-empty`, offline); the derived PostgreSQL schema must be the one
 * generated from schema.prisma now; and the two engines must agree on keys,
 * indexes, unique constraints, foreign keys and column types.
 */

let scratch: string;
const databases: string[] = [];

beforeAll(() => {
  scratch = mkdtempSync(path.join(os.tmpdir(), "atrium-drift-"));
});
afterAll(async () => {
  rmSync(scratch, { recursive: true, force: true });
  for (const url of databases) await dropTestDatabase(url);
});

/** The SQL that creates `schemaPath`'s data model in an empty database (the Prisma CLI, offline). */
async function createScript(schemaPath: string): Promise<string> {
  const { stdout } = await run(process.execPath, [PRISMA_CLI, "migrate", "diff", "--from-empty", "--to-schema-datamodel", schemaPath, "--script"], {
    cwd: PROJECT_ROOT,
    // prisma.config.ts opens DATABASE_URL even for a diff of schema files: a scratch file, never a real database.
    // Prisma's engine mirror is a closed port: the diff (and so npm run migration:new) must need no download
    // (docs/decisions/0025a).
    env: { ...process.env, DATABASE_URL: `file:${path.join(scratch, "cli.db")}`, CHECKPOINT_DISABLE: "1", PRISMA_ENGINES_MIRROR: "http://127.0.0.1:9" },
  });
  return stdout.replace(/^Loaded Prisma config.*\n/m, "");
}

// ---------------------------------------------------------------------------------------------------------------
// Catalogs

type SqliteCatalog = Record<string, { columns: unknown[]; indexes: unknown[]; foreignKeys: unknown[] }>;

function sqliteCatalog(file: string): SqliteCatalog {
  const db = new Database(file, { readonly: true });
  try {
    const tables = db
      .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> '_prisma_migrations' ORDER BY name`)
      .pluck()
      .all() as string[];
    const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
    return Object.fromEntries(
      tables.map((table) => {
        // Column order is not compared: ADD COLUMN appends, a fresh CREATE TABLE follows the schema.
        const columns = (db.pragma(`table_xinfo("${table}")`) as { name: string; type: string; notnull: number; dflt_value: string | null; pk: number; hidden: number }[])
          .map(({ name, type, notnull, dflt_value, pk, hidden }) => ({ name, type, notnull, dflt_value, pk, hidden }))
          .sort(byName);
        const indexes = (db.pragma(`index_list("${table}")`) as { name: string; unique: number; origin: string; partial: number }[])
          .map((index) => ({
            // A primary key's automatic index is named after the table it was created as (Prisma's table redefinitions create new_<table>).
            name: index.origin === "pk" ? "(primary key)" : index.name,
            unique: index.unique,
            origin: index.origin,
            partial: index.partial,
            columns: (db.pragma(`index_xinfo("${index.name}")`) as { name: string | null; desc: number; coll: string; key: number }[])
              .filter((column) => column.key)
              .map(({ name, desc, coll }) => ({ name, desc, coll })),
          }))
          .sort(byName);
        const keys = new Map<number, { table: string; from: string[]; to: string[]; on_update: string; on_delete: string; match: string }>();
        for (const key of db.pragma(`foreign_key_list("${table}")`) as { id: number; table: string; from: string; to: string; on_update: string; on_delete: string; match: string }[]) {
          const entry = keys.get(key.id) ?? { table: key.table, from: [], to: [], on_update: key.on_update, on_delete: key.on_delete, match: key.match };
          entry.from.push(key.from);
          entry.to.push(key.to);
          keys.set(key.id, entry);
        }
        const foreignKeys = [...keys.values()].sort((a, b) => `${a.table}${a.from}`.localeCompare(`${b.table}${b.from}`));
        return [table, { columns, indexes, foreignKeys }];
      }),
    );
  } finally {
    db.close();
  }
}

async function postgresCatalog(client: pg.Client) {
  const query = async (sql: string) => (await client.query(sql)).rows;
  return {
    // Column order is not compared: ADD COLUMN appends, a fresh CREATE TABLE follows the schema.
    columns: await query(`
      SELECT table_name, column_name, data_type, udt_name, is_nullable, column_default, character_maximum_length,
             numeric_precision, numeric_scale, datetime_precision, collation_name, is_identity, is_generated
        FROM information_schema.columns
       WHERE table_schema = 'public' AND table_name <> '_prisma_migrations'
       ORDER BY table_name, column_name`),
    constraints: await query(`
      SELECT rel.relname AS table_name, con.conname, con.contype, pg_get_constraintdef(con.oid) AS definition
        FROM pg_constraint con JOIN pg_class rel ON rel.oid = con.conrelid JOIN pg_namespace ns ON ns.oid = rel.relnamespace
       WHERE ns.nspname = 'public' AND rel.relname <> '_prisma_migrations'
       ORDER BY rel.relname, con.conname`),
    indexes: await query(`
      SELECT tablename, indexname, indexdef FROM pg_indexes
       WHERE schemaname = 'public' AND tablename <> '_prisma_migrations'
       ORDER BY tablename, indexname`),
    types: await query(`
      SELECT t.typname, array_agg(e.enumlabel ORDER BY e.enumsortorder) AS labels
        FROM pg_type t JOIN pg_namespace ns ON ns.oid = t.typnamespace LEFT JOIN pg_enum e ON e.enumtypid = t.oid
       WHERE ns.nspname = 'public' AND t.typtype IN ('e', 'd', 'c') AND t.typrelid = 0
       GROUP BY t.typname ORDER BY t.typname`),
    sequences: await query(`SELECT sequence_name, data_type FROM information_schema.sequences WHERE sequence_schema = 'public' ORDER BY sequence_name`),
  };
}

/** Keys, indexes, foreign keys and columns in terms both engines share, to compare one engine's schema with the other's. */
type Shape = {
  columns: string[];
  primaryKeys: string[];
  indexes: string[];
  foreignKeys: string[];
};

// How Prisma maps its scalar types on each engine (https://www.prisma.io/docs/orm/reference/prisma-schema-reference#model-field-scalar-types).
const SQLITE_TYPES: Record<string, string> = { TEXT: "String", INTEGER: "Int", DATETIME: "DateTime", BLOB: "Bytes", BOOLEAN: "Boolean", REAL: "Float", BIGINT: "BigInt", DECIMAL: "Decimal", JSONB: "Json" };
const POSTGRES_TYPES: Record<string, string> = { text: "String", int4: "Int", timestamp: "DateTime", bytea: "Bytes", bool: "Boolean", float8: "Float", int8: "BigInt", numeric: "Decimal", jsonb: "Json" };
const ACTIONS: Record<string, string> = { a: "NO ACTION", r: "RESTRICT", c: "CASCADE", n: "SET NULL", d: "SET DEFAULT" };

function sqliteShape(catalog: SqliteCatalog): Shape {
  const shape: Shape = { columns: [], primaryKeys: [], indexes: [], foreignKeys: [] };
  for (const [table, { columns, indexes, foreignKeys }] of Object.entries(catalog)) {
    const cols = columns as { name: string; type: string; notnull: number; pk: number }[];
    const pk = cols.filter((column) => column.pk).sort((a, b) => a.pk - b.pk);
    // A lone INTEGER PRIMARY KEY is the table's rowid, 64 bits: PostgreSQL's BIGINT (scripts/lib/sqlite-autoincrement.ts).
    const typeOf = (column: { type: string; pk: number }) => (column.type === "INTEGER" && column.pk && pk.length === 1 ? "BigInt" : (SQLITE_TYPES[column.type] ?? column.type));
    for (const column of cols) shape.columns.push(`${table}.${column.name} ${typeOf(column)}${column.notnull || column.pk ? "" : "?"}`);
    shape.primaryKeys.push(`${table}(${pk.map((column) => column.name).join(",")})`);
    for (const index of indexes as { name: string; unique: number; origin: string; columns: { name: string }[] }[]) {
      if (index.origin === "pk") continue;
      shape.indexes.push(`${index.unique ? "unique " : ""}${index.name} ON ${table}(${index.columns.map((column) => column.name).join(",")})`);
    }
    for (const key of foreignKeys as { table: string; from: string[]; to: string[]; on_update: string; on_delete: string }[]) {
      shape.foreignKeys.push(`${table}(${key.from.join(",")}) → ${key.table}(${key.to.join(",")}) ON DELETE ${key.on_delete} ON UPDATE ${key.on_update}`);
    }
  }
  return sortShape(shape);
}

async function postgresShape(client: pg.Client): Promise<Shape> {
  const shape: Shape = { columns: [], primaryKeys: [], indexes: [], foreignKeys: [] };
  const { rows: columns } = await client.query<{ table_name: string; column_name: string; udt_name: string; is_nullable: string }>(
    `SELECT table_name, column_name, udt_name, is_nullable FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> '_prisma_migrations'`,
  );
  for (const column of columns) {
    shape.columns.push(`${column.table_name}.${column.column_name} ${POSTGRES_TYPES[column.udt_name] ?? column.udt_name}${column.is_nullable === "YES" ? "?" : ""}`);
  }
  const { rows: indexes } = await client.query<{ table_name: string; index_name: string; unique: boolean; primary: boolean; columns: string[] }>(`
    SELECT t.relname AS table_name, i.relname AS index_name, x.indisunique AS unique, x.indisprimary AS primary,
           array(SELECT a.attname FROM unnest(x.indkey) WITH ORDINALITY AS k(attnum, n)
                   JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS columns
      FROM pg_index x JOIN pg_class t ON t.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_namespace ns ON ns.oid = t.relnamespace
     WHERE ns.nspname = 'public' AND t.relname <> '_prisma_migrations'`);
  for (const index of indexes) {
    if (index.primary) shape.primaryKeys.push(`${index.table_name}(${index.columns.join(",")})`);
    else shape.indexes.push(`${index.unique ? "unique " : ""}${index.index_name} ON ${index.table_name}(${index.columns.join(",")})`);
  }
  const { rows: keys } = await client.query<{ table_name: string; columns: string[]; referenced: string; referenced_columns: string[]; on_delete: string; on_update: string }>(`
    SELECT t.relname AS table_name, r.relname AS referenced, c.confdeltype AS on_delete, c.confupdtype AS on_update,
           array(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, n)
                   JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS columns,
           array(SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, n)
                   JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS referenced_columns
      FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class r ON r.oid = c.confrelid JOIN pg_namespace ns ON ns.oid = t.relnamespace
     WHERE c.contype = 'f' AND ns.nspname = 'public'`);
  for (const key of keys) {
    shape.foreignKeys.push(
      `${key.table_name}(${key.columns.join(",")}) → ${key.referenced}(${key.referenced_columns.join(",")}) ON DELETE ${ACTIONS[key.on_delete]} ON UPDATE ${ACTIONS[key.on_update]}`,
    );
  }
  return sortShape(shape);
}

function sortShape(shape: Shape): Shape {
  return { columns: shape.columns.sort(), primaryKeys: shape.primaryKeys.sort(), indexes: shape.indexes.sort(), foreignKeys: shape.foreignKeys.sort() };
}

// ---------------------------------------------------------------------------------------------------------------

describe("schema drift: every change to prisma/schema.prisma has its migrations", () => {
  let sqliteMigrated: string;
  let postgresMigrated: string;
  let sqliteScript: Promise<string>;
  let postgresScript: Promise<string>;

  beforeAll(async () => {
    // Each Prisma CLI run takes seconds: both start now, side by side. The PostgreSQL schema is derived from
    // schema.prisma as it is now (not the committed derived file), so a field added without running migration:new
    // fails the PostgreSQL comparison too.
    const postgresSchema = path.join(scratch, "postgresql.prisma");
    writeFileSync(postgresSchema, derivePostgresSchema(readFileSync(SQLITE_SCHEMA_PATH, "utf8")));
    // As npm run migration:new writes SQLite migrations: a BigInt key the database numbers is SQLite's rowid.
    sqliteScript = createScript(SQLITE_SCHEMA_PATH).then((script) => withSqliteAutoincrement(script, readFileSync(SQLITE_SCHEMA_PATH, "utf8")));
    postgresScript = createScript(postgresSchema);
    // Awaited by the tests; a failure here would otherwise be an unhandled rejection until then.
    sqliteScript.catch(() => undefined);
    postgresScript.catch(() => undefined);
    sqliteMigrated = path.join(scratch, "migrated.db");
    migrateDatabase(sqliteMigrated, defaultMigrationsDir());
    postgresMigrated = await createTestDatabase({ migrated: false });
    databases.push(postgresMigrated);
    await migratePostgres(postgresMigrated, defaultPostgresMigrationsDir());
  });

  it("prisma/postgresql/schema.prisma is the one derived from prisma/schema.prisma now (npm run migration:new rewrites it)", () => {
    const derived = derivePostgresSchema(readFileSync(SQLITE_SCHEMA_PATH, "utf8"));
    expect(readFileSync(POSTGRES_SCHEMA_PATH, "utf8"), "prisma/postgresql/schema.prisma is stale: run npm run migration:new -- <name>").toBe(derived);
  });

  it("SQLite: the migrations build the database prisma/schema.prisma describes", async () => {
    const expected = path.join(scratch, "from-schema.db");
    const db = new Database(expected);
    db.exec(await sqliteScript);
    db.close();
    expect(sqliteCatalog(sqliteMigrated), "prisma/migrations/ does not build prisma/schema.prisma: run npm run migration:new -- <name>").toEqual(
      sqliteCatalog(expected),
    );
  });

  it("PostgreSQL: the migrations build the database prisma/schema.prisma describes", async () => {
    const expected = await createTestDatabase({ migrated: false });
    databases.push(expected);
    const script = await postgresScript;
    await withClient(expected, (client) => client.query(script));
    const [migrated, fromSchema] = await Promise.all([withClient(postgresMigrated, postgresCatalog), withClient(expected, postgresCatalog)]);
    expect(migrated, "prisma/postgresql/migrations/ does not build prisma/schema.prisma: run npm run migration:new -- <name>").toEqual(fromSchema);
  });

  it("both engines have the same keys, indexes, unique constraints, foreign keys and column types", async () => {
    const postgres = await withClient(postgresMigrated, postgresShape);
    expect(postgres).toEqual(sqliteShape(sqliteCatalog(sqliteMigrated)));
    // Sanity: the comparison sees what it should.
    expect(postgres.foreignKeys).toContain('Grant(accountDid) → Account(did) ON DELETE CASCADE ON UPDATE CASCADE');
    expect(postgres.indexes).toContain("unique Account_handle_key ON Account(handle)");
    // The event log's sequence numbers are 64 bits on both engines (docs/decisions/0044).
    expect(postgres.columns).toContain("RepoEvent.seq BigInt");
  });

  it("migrations made since PostgreSQL's first one exist under the same name for both engines", () => {
    const names = (dir: string) => readdirSync(dir, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
    const postgres = names(defaultPostgresMigrationsDir()).sort();
    const sqlite = names(defaultMigrationsDir()).sort();
    const first = postgres[0]!;
    expect(postgres.slice(1)).toEqual(sqlite.filter((name) => name > first));
  });
});
