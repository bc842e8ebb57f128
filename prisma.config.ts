import path from "node:path";
import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";
import { defineConfig } from "prisma/config";

// Prisma 6.19's JavaScript schema engine: migrate, generate and studio run with
// npm packages only (no native engine download). See docs/decisions/0001.
const databaseUrl = process.env.DATABASE_URL ?? "file:./data/atrium.db";

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
