import { afterAll, describe, expect, it } from "vitest";
import { APP_ROLE, createTestDatabase, dropTestDatabase, postgresAdminUrl, withClient } from "../helpers/postgres.ts";

/** The test cluster of tests/helpers/postgres.ts: what createTestDatabase promises other tests. */
describe("the PostgreSQL test cluster", () => {
  const made: string[] = [];
  afterAll(async () => {
    for (const url of made) await dropTestDatabase(url);
  });
  const create = async (options?: { migrated?: boolean }) => {
    const url = await createTestDatabase(options);
    made.push(url);
    return url;
  };

  it("listens on 127.0.0.1 only, runs in UTC and allows the connections several server processes need", async () => {
    const admin = new URL(postgresAdminUrl());
    expect(admin.hostname).toBe("127.0.0.1");
    const settings = await withClient(admin.href, async (client) => {
      const { rows } = await client.query<{ name: string; setting: string }>(
        `SELECT name, setting FROM pg_settings WHERE name IN ('listen_addresses', 'TimeZone', 'max_connections', 'fsync')`,
      );
      return Object.fromEntries(rows.map((row) => [row.name, row.setting]));
    });
    expect(settings).toEqual({ listen_addresses: "127.0.0.1", TimeZone: "UTC", max_connections: "200", fsync: "off" });
  });

  it("gives each caller a new migrated database of its own, owned by the app role", async () => {
    const [first, second] = await Promise.all([create(), create()]);
    expect(first).not.toBe(second);
    expect(new URL(first!).username).toBe(APP_ROLE);
    await withClient(first!, (client) => client.query(`INSERT INTO "ServerSecret" (name, value) VALUES ('only-in-first', 'x')`));
    const count = (url: string) =>
      withClient(url, async (client) => (await client.query<{ n: string }>(`SELECT count(*) AS n FROM "ServerSecret"`)).rows[0]!.n);
    expect(await count(first!)).toBe("1");
    expect(await count(second!)).toBe("0");
    const migrations = await withClient(second!, async (client) => (await client.query(`SELECT migration_name FROM "_prisma_migrations"`)).rowCount);
    expect(migrations).toBeGreaterThan(0);
  });

  it("gives an empty database on request, and drops a database with its connections", async () => {
    const url = await createTestDatabase({ migrated: false });
    const tables = await withClient(url, async (client) => (await client.query(`SELECT 1 FROM pg_tables WHERE schemaname = 'public'`)).rowCount);
    expect(tables).toBe(0);
    const held = await withClient(url, async (client) => {
      // A connection still open (a server that did not stop) does not keep the database.
      await dropTestDatabase(url);
      return client.query("SELECT 1").then(() => "still connected", (error: Error) => error.message);
    });
    expect(held).not.toBe("still connected");
    await expect(withClient(url, (client) => client.query("SELECT 1"))).rejects.toThrow(/does not exist/);
  });

  it("refuses to drop a database it did not make", async () => {
    await expect(dropTestDatabase(postgresAdminUrl())).rejects.toThrow(/not a database createTestDatabase made/);
  });
});
