import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, dropTestDatabase, withClient } from "../../../tests/helpers/postgres.ts";
import { defaultPostgresMigrationsDir, MIGRATION_LOCK_KEY, migratePostgres } from "./migrate-postgres.ts";

const run = promisify(execFile);
const APPLIER = path.join(import.meta.dirname, "migrate-postgres.ts");
const WAYS_BACK_MIGRATION = "20261126061420_pushed_request_ways_back";

/**
 * The PostgreSQL applier against the test cluster (tests/helpers/postgres.ts):
 * what Prisma's tools will read back, several processes starting at once, and
 * a migration that fails.
 */
describe("migratePostgres", () => {
  let dir: string;
  const databases: string[] = [];
  const freshDatabase = async () => {
    const url = await createTestDatabase({ migrated: false });
    databases.push(url);
    return url;
  };
  /** A migrations folder: the project's PostgreSQL migrations, then `extra` (name → SQL). */
  const migrationsWith = (extra: Record<string, string>) => {
    const folder = mkdtempSync(path.join(dir, "migrations-"));
    cpSync(defaultPostgresMigrationsDir(), folder, { recursive: true });
    for (const [name, sql] of Object.entries(extra)) {
      mkdirSync(path.join(folder, name));
      writeFileSync(path.join(folder, name, "migration.sql"), sql);
    }
    return folder;
  };
  const projectMigrations = readdirSync(defaultPostgresMigrationsDir(), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  // Applying any of these twice fails (the table exists) or shows (two rows).
  const RACE_EXTRA = {
    "29990101000000_race_marker": `CREATE TABLE "RaceMarker" ("id" SERIAL PRIMARY KEY, "note" TEXT NOT NULL);`,
    "29990101000001_race_marker_row": `INSERT INTO "RaceMarker" ("note") VALUES ('applied');`,
  };
  const raceNames = [...projectMigrations, ...Object.keys(RACE_EXTRA)];

  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "atrium-migrate-pg-"));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    for (const url of databases) await dropTestDatabase(url);
  });

  const recorded = (url: string) =>
    withClient(url, async (client) =>
      (await client.query<{ migration_name: string; checksum: string; finished_at: Date | null; applied_steps_count: number; rolled_back_at: Date | null }>(
        `SELECT migration_name, checksum, finished_at, applied_steps_count, rolled_back_at FROM "_prisma_migrations" ORDER BY migration_name`,
      )).rows,
    );
  const markers = (url: string) => withClient(url, async (client) => (await client.query(`SELECT note FROM "RaceMarker"`)).rows);

  it("applies every migration and records it as Prisma does (its table, columns and SHA-256 checksum), then has nothing to do", async () => {
    const url = await freshDatabase();
    expect(await migratePostgres(url)).toEqual({ applied: projectMigrations });
    const rows = await recorded(url);
    expect(rows.map((row) => row.migration_name)).toEqual(projectMigrations);
    for (const row of rows) {
      const sql = readFileSync(path.join(defaultPostgresMigrationsDir(), row.migration_name, "migration.sql"));
      expect(row.checksum).toBe(createHash("sha256").update(sql).digest("hex"));
      expect(row.finished_at).toBeInstanceOf(Date);
      expect(row.rolled_back_at).toBeNull();
      expect(row.applied_steps_count).toBe(1);
    }
    // The columns Prisma's schema engine creates for PostgreSQL (prisma migrate status reads them).
    const columns = await withClient(url, async (client) =>
      (await client.query(
        `SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = '_prisma_migrations' ORDER BY ordinal_position`,
      )).rows,
    );
    expect(columns).toEqual([
      { column_name: "id", data_type: "character varying", is_nullable: "NO" },
      { column_name: "checksum", data_type: "character varying", is_nullable: "NO" },
      { column_name: "finished_at", data_type: "timestamp with time zone", is_nullable: "YES" },
      { column_name: "migration_name", data_type: "character varying", is_nullable: "NO" },
      { column_name: "logs", data_type: "text", is_nullable: "YES" },
      { column_name: "rolled_back_at", data_type: "timestamp with time zone", is_nullable: "YES" },
      { column_name: "started_at", data_type: "timestamp with time zone", is_nullable: "NO" },
      { column_name: "applied_steps_count", data_type: "integer", is_nullable: "NO" },
    ]);
    expect(await migratePostgres(url)).toEqual({ applied: [] });
  });

  it("applies each migration exactly once when five callers start at the same moment", async () => {
    const url = await freshDatabase();
    const migrations = migrationsWith(RACE_EXTRA);
    const results = await Promise.all(Array.from({ length: 5 }, () => migratePostgres(url, migrations)));
    expect(results.flatMap((result) => result.applied).sort()).toEqual(raceNames);
    expect((await recorded(url)).map((row) => row.migration_name)).toEqual(raceNames);
    expect(await markers(url)).toEqual([{ note: "applied" }]);
  });

  it("applies each migration exactly once when two processes, three callers each, start at the same moment", async () => {
    const url = await freshDatabase();
    const migrations = migrationsWith(RACE_EXTRA);
    const child = `const { migratePostgres } = await import(process.argv[1]);
      const results = await Promise.all([0, 1, 2].map(() => migratePostgres(process.argv[2], process.argv[3])));
      console.log(JSON.stringify(results.flatMap((result) => result.applied)));`;
    const outputs = await Promise.all(
      [0, 1].map(() => run(process.execPath, ["--import", "tsx", "--input-type=module", "-e", child, APPLIER, url, migrations])),
    );
    const applied = outputs.flatMap(({ stdout }) => JSON.parse(stdout.trim().split("\n").at(-1)!) as string[]);
    expect(applied.sort()).toEqual(raceNames);
    expect((await recorded(url)).map((row) => row.migration_name)).toEqual(raceNames);
    expect(await markers(url)).toEqual([{ note: "applied" }]);
  });

  it("waits while Prisma Migrate's advisory lock is held elsewhere, then applies", async () => {
    const url = await freshDatabase();
    await withClient(url, async (holder) => {
      await holder.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
      const migrating = migratePostgres(url);
      // The applier's connection shows up waiting on an advisory lock; nothing is recorded meanwhile.
      let waiting = false;
      for (let i = 0; i < 200 && !waiting; i++) {
        const { rows } = await holder.query(
          `SELECT 1 FROM pg_stat_activity WHERE application_name = 'atrium-migrate' AND datname = current_database() AND wait_event = 'advisory'`,
        );
        waiting = rows.length > 0;
        if (!waiting) await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(waiting).toBe(true);
      expect((await holder.query(`SELECT to_regclass('"Account"') AS t`)).rows).toEqual([{ t: null }]);
      await holder.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]);
      expect(await migrating).toEqual({ applied: projectMigrations });
    });
  });

  it("keeps pushed requests through the ways-back migration: a live one whole, an answered one as its way back (docs/decisions/0022)", async () => {
    const url = await freshDatabase();
    const before = mkdtempSync(path.join(dir, "migrations-"));
    for (const name of projectMigrations) if (name < WAYS_BACK_MIGRATION) cpSync(path.join(defaultPostgresMigrationsDir(), name), path.join(before, name), { recursive: true });
    await migratePostgres(url, before);
    const full = JSON.stringify({ client_id: "c", redirect_uri: "https://app.example/cb", scope: "atproto", state: "s1", code_challenge: "x", response_mode: "query" });
    const wayBack = JSON.stringify({ client_id: "c", redirect_uri: "https://app.example/cb", state: "s2", response_mode: "fragment" });
    await withClient(url, async (client) => {
      const insert = `INSERT INTO "AuthorizationRequest" ("idHash", "clientId", "parameters", "dpopJkt", "createdAt", "expiresAt", "consumedAt") VALUES ($1, 'c', $2, 'j', $3, $4, $5)`;
      await client.query(insert, ["live", full, "2026-11-01T00:00:00Z", "2026-11-01T00:05:00Z", null]);
      await client.query(insert, ["answered", wayBack, "2026-11-01T00:00:00Z", "2026-11-01T00:05:00Z", "2026-11-01T00:01:00Z"]);
    });
    expect((await migratePostgres(url)).applied).toContain(WAYS_BACK_MIGRATION);
    const rows = await withClient(url, async (client) =>
      (await client.query(`SELECT "idHash", "parameters", "wayBack", "shownTo", "pushedFrom", to_char("purgeAt", 'YYYY-MM-DD HH24:MI') AS "purgeAt" FROM "AuthorizationRequest" ORDER BY "idHash"`)).rows,
    );
    expect(rows).toEqual([
      { idHash: "answered", parameters: null, wayBack, shownTo: null, pushedFrom: null, purgeAt: "2026-11-02 00:05" },
      { idHash: "live", parameters: full, wayBack: null, shownTo: null, pushedFrom: null, purgeAt: "2026-11-01 00:05" },
    ]);
  });

  describe("a migration that fails", () => {
    let url: string;
    let migrations: string;
    const BROKEN = "29990101000001_broken";
    beforeAll(async () => {
      url = await freshDatabase();
    });

    it("leaves nothing of itself, names itself, and keeps the migrations before it", async () => {
      migrations = migrationsWith({
        "29990101000000_fine": `CREATE TABLE "Fine" ("id" TEXT PRIMARY KEY);`,
        [BROKEN]: `CREATE TABLE "HalfDone" ("id" TEXT PRIMARY KEY);\nALTER TABLE "Account" ADD COLUMN "extra" TEXT;\nSELECT * FROM "NoSuchTable";`,
      });
      await expect(migratePostgres(url, migrations)).rejects.toThrow(new RegExp(`Migration ${BROKEN} failed and was rolled back: .*NoSuchTable`));
      const state = await withClient(url, async (client) => ({
        halfDone: (await client.query(`SELECT to_regclass('"HalfDone"') AS t`)).rows[0].t,
        fine: (await client.query(`SELECT to_regclass('"Fine"') AS t`)).rows[0].t,
        extra: (await client.query(`SELECT 1 FROM information_schema.columns WHERE table_name = 'Account' AND column_name = 'extra'`)).rowCount,
      }));
      expect(state).toEqual({ halfDone: null, fine: '"Fine"', extra: 0 });
      expect((await recorded(url)).map((row) => row.migration_name)).toEqual([...projectMigrations, "29990101000000_fine"]);
    });

    it("is applied once fixed, on the next start", async () => {
      writeFileSync(path.join(migrations, BROKEN, "migration.sql"), `CREATE TABLE "HalfDone" ("id" TEXT PRIMARY KEY);`);
      expect(await migratePostgres(url, migrations)).toEqual({ applied: [BROKEN] });
    });
  });
});
