import path from "node:path";
import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";
import { defineConfig } from "prisma/config";

// Prisma 6.19's JavaScript schema engine: migrate diff runs with npm packages
// only (no native engine download). See docs/decisions/0001, 0025a.
const databaseUrl = process.env.DATABASE_URL ?? "file:./data/atrium.db";
// No Prisma client is generated (docs/decisions/0025a), and without a client generator in the schema the CLI assumes
// the "library" client and downloads its native query engine before migrate commands. A "client" engine needs none.
process.env.PRISMA_CLIENT_ENGINE_TYPE ??= "client";

export default defineConfig({
  experimental: { adapter: true, studio: true },
  engine: "js",
  schema: path.join("prisma", "schema.prisma"),
  async adapter() {
    return new PrismaBetterSQLite3({ url: databaseUrl }, { timestampFormat: "unixepoch-ms" });
  },
  studio: {
    adapter: async () => new PrismaBetterSQLite3({ url: databaseUrl }, { timestampFormat: "unixepoch-ms" }),
  },
});
