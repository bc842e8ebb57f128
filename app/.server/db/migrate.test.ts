import { cpSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultMigrationsDir, migrateDatabase } from "./migrate.ts";

const DAY = 24 * 60 * 60 * 1000;
const GRANT_LIFETIME_MIGRATION = "20261123170000_client_keys_grant_lifetime";
const WAYS_BACK_MIGRATION = "20261126061420_pushed_request_ways_back";

/**
 * Upgrading a database that holds data: every migration applied to rows
 * written under the schema before it. Prisma's SQLite migrations redefine
 * tables (create, copy, DROP, rename); with foreign keys on, the DROP of a
 * parent would cascade into its children's rows.
 */
describe("migrateDatabase on a database with data", () => {
  let dir: string;
  let file: string;
  let migrations: string;

  /** A migrations folder holding the project's migrations up to (not including) `before`. */
  const migrationsUpTo = (before: string) => {
    for (const name of readdirSync(defaultMigrationsDir())) {
      if (name < before) cpSync(path.join(defaultMigrationsDir(), name), path.join(migrations, name), { recursive: true });
    }
  };

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "atrium-migrate-"));
    file = path.join(dir, "atrium.db");
    migrations = path.join(dir, "migrations");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("keeps every token of every grant through the grant-lifetime migration, and gives each grant its absolute end", () => {
    migrationsUpTo(GRANT_LIFETIME_MIGRATION);
    migrateDatabase(file, migrations);
    const created = Date.UTC(2026, 9, 1);
    const db = new Database(file);
    db.prepare(`INSERT INTO "Account" (did, handle, email, passwordHash, signingKey, createdAt, updatedAt) VALUES ('did:plc:a', 'a.test', 'a@example.com', 'x', 'k', ?, ?)`).run(created, created);
    const grant = db.prepare(`INSERT INTO "Grant" (id, clientId, accountDid, scope, dpopJkt, clientKeyId, createdAt, lastUsedAt, expiresAt) VALUES (?, 'c', 'did:plc:a', 'atproto', 'j', ?, ?, ?, ?)`);
    grant.run("public", null, created, created, created + 200 * DAY);
    grant.run("confidential", "k1", created, created, created + 80 * DAY);
    for (const id of ["public", "confidential"]) {
      db.prepare(`INSERT INTO "AccessToken" (tokenHash, grantId, createdAt, expiresAt) VALUES (?, ?, ?, ?)`).run(`a-${id}`, id, created, created + DAY);
      db.prepare(`INSERT INTO "RefreshToken" (tokenHash, grantId, createdAt, expiresAt, usedAt) VALUES (?, ?, ?, ?, NULL)`).run(`r-${id}`, id, created, created + 90 * DAY);
    }
    db.close();

    const { applied } = migrateDatabase(file, defaultMigrationsDir());
    expect(applied).toContain(GRANT_LIFETIME_MIGRATION);

    const after = new Database(file, { readonly: true });
    expect(after.prepare(`SELECT COUNT(*) AS n FROM "AccessToken"`).get()).toEqual({ n: 2 });
    expect(after.prepare(`SELECT COUNT(*) AS n FROM "RefreshToken"`).get()).toEqual({ n: 2 });
    const grants = after.prepare(`SELECT id, expiresAt, endsAt FROM "Grant" ORDER BY id`).all();
    expect(grants).toEqual([
      { id: "confidential", expiresAt: created + 80 * DAY, endsAt: created + 730 * DAY },
      { id: "public", expiresAt: created + 90 * DAY, endsAt: created + 90 * DAY },
    ]);
    expect(after.pragma("foreign_key_check")).toEqual([]);
    after.close();
  });

  it("keeps pushed requests through the ways-back migration: a live one whole, an answered one as its way back (docs/decisions/0022)", () => {
    migrationsUpTo(WAYS_BACK_MIGRATION);
    migrateDatabase(file, migrations);
    const created = Date.UTC(2026, 10, 1);
    const full = JSON.stringify({ client_id: "c", redirect_uri: "https://app.example/cb", scope: "atproto", state: "s1", code_challenge: "x", response_mode: "query" });
    const wayBack = JSON.stringify({ client_id: "c", redirect_uri: "https://app.example/cb", state: "s2", response_mode: "fragment" });
    const db = new Database(file);
    const insert = db.prepare(`INSERT INTO "AuthorizationRequest" (idHash, clientId, parameters, dpopJkt, createdAt, expiresAt, consumedAt) VALUES (?, 'c', ?, 'j', ?, ?, ?)`);
    insert.run("live", full, created, created + 5 * 60_000, null);
    insert.run("answered", wayBack, created, created + 5 * 60_000, created + 60_000);
    db.close();

    expect(migrateDatabase(file, defaultMigrationsDir()).applied).toContain(WAYS_BACK_MIGRATION);
    const after = new Database(file, { readonly: true });
    expect(after.prepare(`SELECT idHash, parameters, wayBack, shownTo, pushedFrom, expiresAt, purgeAt FROM "AuthorizationRequest" ORDER BY idHash`).all()).toEqual([
      { idHash: "answered", parameters: null, wayBack, shownTo: null, pushedFrom: null, expiresAt: created + 5 * 60_000, purgeAt: created + 5 * 60_000 + DAY },
      { idHash: "live", parameters: full, wayBack: null, shownTo: null, pushedFrom: null, expiresAt: created + 5 * 60_000, purgeAt: created + 5 * 60_000 },
    ]);
    after.close();
  });

  it("applies nothing twice: a second run (another process starting at the same moment) finds every migration recorded", () => {
    migrateDatabase(file, defaultMigrationsDir());
    expect(migrateDatabase(file, defaultMigrationsDir()).applied).toEqual([]);
  });
});
