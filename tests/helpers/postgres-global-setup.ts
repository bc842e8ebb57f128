import type { TestProject } from "vitest/node";
import { prepareTemplate, startPostgresCluster } from "./postgres-cluster.ts";

/**
 * Vitest global setup: one PostgreSQL cluster for the whole run, its template
 * database migrated once, its superuser URL provided to the tests
 * (`inject("postgresAdminUrl")`, used by createTestDatabase in
 * tests/helpers/postgres.ts). Stopped and removed at teardown; when the run is
 * interrupted, postgres-watchdog.sh does it.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const cluster = await startPostgresCluster();
  try {
    await prepareTemplate(cluster);
  } catch (error) {
    await cluster.stop();
    throw new Error(`Preparing the test database template failed: ${error instanceof Error ? error.message : String(error)}\n${cluster.output()}`, { cause: error });
  }
  project.provide("postgresAdminUrl", cluster.adminUrl);
  return () => cluster.stop();
}
