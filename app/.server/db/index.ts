import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";
import Database from "better-sqlite3";
import { PrismaClient } from "../generated/prisma/client.ts";

/**
 * Two handles on one SQLite file, opened once by the services:
 * - `prisma`, for ordinary reads and writes (accounts, sessions, client cache);
 * - `sqlite`, a synchronous better-sqlite3 connection for the atomic OAuth
 *   steps (consume a code and create its grant, rotate a refresh token, ...).
 *   A synchronous transaction cannot interleave with any other query of this
 *   process, and SQLite's write lock serialises it against other processes.
 *   Prisma's better-sqlite3 adapter shares one connection between an open
 *   interactive transaction and every other query, so it cannot give that
 *   guarantee. See docs/decisions/0002.
 * Timestamps are epoch milliseconds in both.
 */

export type DatabaseHandles = { prisma: PrismaClient; sqlite: Database.Database; close(): Promise<void> };

export function openSqlite(databasePath: string): Database.Database {
  const db = new Database(databasePath);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  db.pragma("foreign_keys = ON");
  return db;
}

export function openPrisma(databaseUrl: string): PrismaClient {
  const adapter = new PrismaBetterSQLite3({ url: databaseUrl, timeout: 5000 }, { timestampFormat: "unixepoch-ms" });
  return new PrismaClient({ adapter });
}

export function openDatabase(config: { databaseUrl: string; databasePath: string }): DatabaseHandles {
  const prisma = openPrisma(config.databaseUrl);
  const sqlite = openSqlite(config.databasePath);
  return {
    prisma,
    sqlite,
    async close() {
      await prisma.$disconnect();
      sqlite.close();
    },
  };
}
