import { defineConfig } from "vitest/config";

// Tests run without the Remix plugin: unit tests import domain modules
// directly, integration tests start the built server as a child process.
// The global setup starts one private PostgreSQL cluster for the run
// (tests/helpers/postgres.ts: createTestDatabase).
export default defineConfig({
  test: {
    include: ["app/**/*.test.ts", "tests/**/*.test.ts", "scripts/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    globalSetup: ["tests/helpers/postgres-global-setup.ts"],
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
