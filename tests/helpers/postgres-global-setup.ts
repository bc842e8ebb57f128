import type { TestProject } from "vitest/node";
import { startPlcDirectory, type RunningPlcDirectory } from "../../scripts/lib/plc-directory.ts";
import { prepareTemplate, startPostgresCluster, type PostgresCluster } from "./postgres-cluster.ts";

declare module "vitest" {
  export interface ProvidedContext {
    /** The test run's PLC directory (scripts/lib/plc-directory.ts), http://127.0.0.1:<port>. */
    plcDirectoryUrl: string;
  }
}

/**
 * Vitest global setup: one PostgreSQL cluster for the whole run (shared by every project), its template
 * database migrated once, its superuser URL provided to the tests
 * (`inject("postgresAdminUrl")`, used by createTestDatabase in
 * tests/helpers/postgres.ts); and one real PLC directory on loopback, in
 * memory (`inject("plcDirectoryUrl")`), named by ATRIUM_PLC_DIRECTORY_URL in
 * the environment every test process, test server and account CLI inherits,
 * so that each account the tests create is a registered did:plc. Stopped and
 * removed at teardown; when the run is interrupted, postgres-watchdog.sh
 * removes the cluster (the directory lives in this process).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const plc = await sharedPlcDirectory();
  project.provide("plcDirectoryUrl", plc.url);
  let cluster: SharedCluster;
  try {
    cluster = await sharedCluster();
  } catch (error) {
    await plc.release();
    throw error;
  }
  project.provide("postgresAdminUrl", cluster.adminUrl);
  return async () => {
    await cluster.release();
    await plc.release();
  };
}

type SharedCluster = { adminUrl: string; release(): Promise<void> };
type Cluster = { cluster: Promise<PostgresCluster>; users: number };
const CLUSTER = Symbol.for("atrium.tests.postgresCluster");
const clusters = globalThis as typeof globalThis & { [CLUSTER]?: Cluster };

/**
 * One cluster for every project of the run, as one PLC directory (below): the global setup runs once for the root and
 * once per project, and each initdb and template migration costs seconds of CPU (docs/decisions/0036). Every
 * project's databases are copies of the one template, each under a name of its own.
 */
async function sharedCluster(): Promise<SharedCluster> {
  clusters[CLUSTER] ??= { cluster: startPreparedCluster(), users: 0 };
  const current = clusters[CLUSTER];
  current.users += 1;
  let cluster: PostgresCluster;
  try {
    cluster = await current.cluster;
  } catch (error) {
    current.users -= 1;
    if (clusters[CLUSTER] === current) delete clusters[CLUSTER];
    throw error;
  }
  return {
    adminUrl: cluster.adminUrl,
    async release() {
      current.users -= 1;
      if (current.users > 0) return;
      if (clusters[CLUSTER] === current) delete clusters[CLUSTER];
      await cluster.stop();
    },
  };
}

async function startPreparedCluster(): Promise<PostgresCluster> {
  const cluster = await startPostgresCluster();
  try {
    await prepareTemplate(cluster);
  } catch (error) {
    await cluster.stop();
    throw new Error(`Preparing the test database template failed: ${error instanceof Error ? error.message : String(error)}\n${cluster.output()}`, { cause: error });
  }
  return cluster;
}

type SharedDirectory = { url: string; release(): Promise<void> };
type Shared = { directory: Promise<RunningPlcDirectory>; users: number };
// On globalThis: Vitest may load this module once per project.
const SHARED = Symbol.for("atrium.tests.plcDirectory");
const registry = globalThis as typeof globalThis & { [SHARED]?: Shared };

/**
 * The global setup runs once per Vitest project, in one process; the environment the test processes inherit holds
 * one ATRIUM_PLC_DIRECTORY_URL, so every project shares one directory, stopped when the last one is done.
 */
async function sharedPlcDirectory(): Promise<SharedDirectory> {
  registry[SHARED] ??= { directory: startPlcDirectory(), users: 0 };
  const current = registry[SHARED];
  current.users += 1;
  const directory = await current.directory;
  process.env.ATRIUM_PLC_DIRECTORY_URL = directory.url;
  return {
    url: directory.url,
    async release() {
      current.users -= 1;
      if (current.users > 0) return;
      if (registry[SHARED] === current) delete registry[SHARED];
      await directory.stop();
    },
  };
}
