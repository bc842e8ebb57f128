import { PrismaBetterSQLite3 } from "@prisma/adapter-better-sqlite3";
import Database from "better-sqlite3";
import { getConfig } from "../config.ts";
import { PrismaClient } from "../generated/prisma/client.ts";

/**
 * Two handles on one SQLite file:
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

let prismaClient: PrismaClient | undefined;
let sqliteHandle: Database.Database | undefined;

export function openSqlite(databasePath: string): Database.Database {
  const db = new Database(databasePath);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  db.pragma("foreign_keys = ON");
  return db;
}

export function getPrisma(): PrismaClient {
  if (!prismaClient) {
    const { databaseUrl } = getConfig();
    const adapter = new PrismaBetterSQLite3({ url: databaseUrl, timeout: 5000 }, { timestampFormat: "unixepoch-ms" });
    prismaClient = new PrismaClient({ adapter });
  }
  return prismaClient;
}

export function getSqlite(): Database.Database {
  sqliteHandle ??= openSqlite(getConfig().databasePath);
  return sqliteHandle;
}

export async function closeDatabase(): Promise<void> {
  await prismaClient?.$disconnect();
  sqliteHandle?.close();
  prismaClient = undefined;
  sqliteHandle = undefined;
}
