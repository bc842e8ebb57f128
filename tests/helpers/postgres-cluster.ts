import path from "node:path";
import { migratePostgres } from "../../app/.server/db/migrate-postgres.ts";
import { databaseUrl, startPostgresCluster as startCluster, withClient, type PostgresCluster } from "../../scripts/lib/postgres-cluster.ts";
import { PROJECT_ROOT } from "../../scripts/lib/server-process.ts";

export { ADMIN_ROLE, databaseUrl, findPostgresBinaries, withClient, type PostgresCluster } from "../../scripts/lib/postgres-cluster.ts";

/**
 * The tests' PostgreSQL cluster, started once per run by the global setup
 * (tests/helpers/postgres-global-setup.ts); tests use tests/helpers/postgres.ts.
 * Apart from it because the global setup runs outside Vitest's workers, where
 * "vitest" may not be imported.
 *
 * The cluster itself (initdb, the postmaster as the `postgres` user, the
 * watchdog that stops it when Vitest exits without its global teardown) is
 * scripts/lib/postgres-cluster.ts, shared with the benchmark; what is the
 * tests' own is here: a throwaway cluster's settings (no fsync), the roles and
 * the migrated template.
 */

/** The role the tests' databases belong to, and the one their URLs name: an ordinary role, as a deployment's would be. */
export const APP_ROLE = "atrium";
/** Migrated once per run; every test database is a copy of it. */
export const TEMPLATE_DATABASE = "atrium_template";
export const TEST_DATABASE_PREFIX = "atrium_test_";

/** Settings for a throwaway cluster: nothing is worth an fsync, and up to 3 server processes × their pool per test, in 2 forks, plus the tests' own connections. */
const SETTINGS: Record<string, string> = {
  listen_addresses: "127.0.0.1",
  max_connections: "200",
  fsync: "off",
  synchronous_commit: "off",
  full_page_writes: "off",
  wal_level: "minimal",
  max_wal_senders: "0",
  // TIMESTAMP(3) columns hold UTC (docs/decisions/0015); CURRENT_TIMESTAMP defaults follow the session's zone.
  timezone: "UTC",
  log_timezone: "UTC",
  // Errors of statements the tests provoke on purpose stay in the output buffer, not in the test log.
  log_min_messages: "warning",
  log_min_error_statement: "panic",
};

/** initdb into a fresh folder, then postgres on a free 127.0.0.1 port with the tests' settings; resolves once it accepts connections. */
export function startPostgresCluster(): Promise<PostgresCluster> {
  return startCluster({ settings: SETTINGS });
}

/** Creates the app role and the template database, and applies the PostgreSQL migrations to it once. */
export async function prepareTemplate(cluster: Pick<PostgresCluster, "adminUrl" | "port">, migrationsDir = path.join(PROJECT_ROOT, "prisma", "postgresql", "migrations")): Promise<void> {
  await withClient(cluster.adminUrl, async (client) => {
    await client.query(`CREATE ROLE "${APP_ROLE}" LOGIN`);
    await client.query(`CREATE DATABASE "${TEMPLATE_DATABASE}" OWNER "${APP_ROLE}"`);
  });
  await migratePostgres(databaseUrl(cluster.port, APP_ROLE, TEMPLATE_DATABASE), migrationsDir);
  // CREATE DATABASE … TEMPLATE fails while anyone is connected to the template: nobody may connect from now on.
  await withClient(cluster.adminUrl, (client) => client.query(`ALTER DATABASE "${TEMPLATE_DATABASE}" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`));
}
