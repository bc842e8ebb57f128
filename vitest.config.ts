import { defineConfig } from "vitest/config";

// Tests run without the Remix plugin: unit tests import domain modules
// directly, integration tests start the built server as a child process.
// The global setup starts one private PostgreSQL cluster for the run
// (tests/helpers/postgres.ts: createTestDatabase).
//
// Two projects (docs/decisions/0017): "sqlite" runs every test, with servers on
// SQLite files (the store contract suites cover both engines themselves);
// "postgresql" runs the integration suite again with every test server on a
// PostgreSQL database of its own (tests/helpers/test-database.ts). Left out of
// the second: what is about SQLite itself (its file, its migrations) or about
// neither engine (the load test's timing, the cluster's own test), and the files
// whose every assertion is about the HTTP entry or a page's HTML, whatever the
// database under it (docs/decisions/0036 says why each).
const SQLITE_ONLY = [
  "tests/integration/health.test.ts",
  "tests/integration/load.test.ts",
  "tests/integration/postgres-cluster.test.ts",
  "tests/integration/language-cookie.test.ts",
  "tests/integration/same-origin-links.test.ts",
  "tests/integration/request-target-and-slow-headers.test.ts",
  "tests/integration/lookalike-caution.test.ts",
  "tests/integration/route-table.test.ts",
  // The outbound fetch of client documents, decided whatever the database (its cache: client-metadata-cache).
  "tests/integration/client-fetch-hardening.test.ts",
  // Service proxying's outbound side: DID documents, upstreams, headers, caps (xrpc-proxy and read-after-write run on both).
  "tests/integration/proxy-upstreams.test.ts",
  // The logger's batches, in processes that open no database.
  "tests/integration/log-output.test.ts",
  // Starts on both engines itself, one build for the two.
  "tests/integration/offline-start.test.ts",
  // Records checked against their lexicons: decided before the store is reached (docs/decisions/0049).
  "tests/integration/xrpc-record-validation.test.ts",
  // Sign-up over XRPC: its answers (docs/decisions/0052); the race of an invite code runs on both (sign-up-race).
  "tests/integration/sign-up-xrpc.test.ts",
  "tests/integration/sign-up-screens.test.ts",
  // The reference's pdsadmin scripts over https: what they send and print, whatever the database (the takedown they
  // make is takedown.test.ts's, on both engines).
  "tests/integration/pdsadmin.test.ts",
  // The operator page's forms and pages over HTTP (its paging's reads are the account store's, on both engines).
  "tests/integration/operator-page.test.ts",
  // The nginx test helper itself: no database.
  "tests/integration/nginx-helper.test.ts",
  // The country file behind nginx and a start it stops (docs/decisions/0056); the notices' store steps run on both
  // engines in sign-in-notices.test.ts.
  "tests/integration/sign-in-notices-country.test.ts",
];
// The load test (a minute of load) is not part of npm test: npm run test:load runs it alone (ATRIUM_LOAD_TEST=1).
const LOAD_TEST = "tests/integration/load.test.ts";
const loadTestRun = process.env.ATRIUM_LOAD_TEST === "1";

export default defineConfig({
  test: {
    // Safety nets against a hang, never speed checks: generous, so that a machine at a load average of 10–20 still
    // passes (tests assert behaviour; timing belongs in npm run bench).
    testTimeout: 180_000,
    hookTimeout: 240_000,
    globalSetup: ["tests/helpers/postgres-global-setup.ts"],
    pool: "forks",
    // docs/decisions/0036: one process per fork runs file after file (a project's files only; Vitest starts new ones
    // for the next project), so that each file does not pay for a new process and for loading the app's modules
    // again. Each file still starts its own servers and makes its own accounts; nothing a test checks lives in a
    // module's state.
    poolOptions: { forks: { maxForks: 2, minForks: 1, isolate: false } },
    projects: [
      {
        extends: true,
        test: {
          name: "sqlite",
          include: loadTestRun ? [LOAD_TEST] : ["app/**/*.test.ts", "tests/**/*.test.ts", "scripts/**/*.test.ts", "eslint-rules/**/*.test.ts"],
          exclude: loadTestRun ? [] : [LOAD_TEST],
        },
      },
      {
        extends: true,
        test: {
          name: "postgresql",
          include: ["tests/integration/**/*.test.ts"],
          exclude: SQLITE_ONLY,
          env: { ATRIUM_TEST_ENGINE: "postgresql" },
        },
      },
    ],
  },
});
