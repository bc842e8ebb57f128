/**
 * npm run studio [-- --port <port>]: Prisma Studio on the database named by
 * DATABASE_URL (default file:./data/atrium.db), SQLite or PostgreSQL.
 *
 * Prisma 6.19's Studio page stays blank without network access (it downloads
 * a native engine to read the schema), so Studio is Prisma 7.10's, which reads
 * the database itself and runs offline on Node 20: better-sqlite3 for SQLite,
 * its own postgres client for PostgreSQL. Prisma 7 lives in a package of its
 * own, tools/prisma-studio, so that its `prisma` command never takes the place
 * of Prisma 6.19's, which diffs the migrations
 * (docs/decisions/0016-prisma-studio-7.md). It listens on 127.0.0.1 only.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "..");
const STUDIO_PACKAGE = path.join(ROOT, "tools", "prisma-studio");
const STUDIO_CONFIG = path.join(STUDIO_PACKAGE, "prisma.config.ts");

/**
 * DATABASE_URL as Prisma 7's Studio takes it: a SQLite file as an absolute file:// URL (a relative path is relative to
 * the working folder, as the server reads it), a PostgreSQL URL as it is.
 */
export function studioDatabaseUrl(databaseUrl: string, cwd = process.cwd()): string {
  if (databaseUrl.startsWith("file:")) {
    const file = path.resolve(cwd, databaseUrl.slice("file:".length).replace(/\?.*$/, ""));
    // Studio would create an empty database for a path that names none: refuse instead, naming the file.
    if (!existsSync(file)) throw new Error(`There is no database at ${file} (DATABASE_URL=${databaseUrl}). Start the server once to create it, or set DATABASE_URL.`);
    return `file://${file}`;
  }
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) return databaseUrl;
  throw new Error("DATABASE_URL must be file:<path> (SQLite) or postgres://… / postgresql://… (PostgreSQL)");
}

/** The command line of Prisma 7's CLI (tools/prisma-studio) for `prisma studio` on `databaseUrl`, plus `args`. */
export function studioCommand(databaseUrl: string, args: string[] = [], env: Record<string, string | undefined> = process.env): string[] {
  const cli = path.join(path.dirname(createRequire(path.join(STUDIO_PACKAGE, "package.json")).resolve("prisma/package.json")), "build", "index.js");
  // No browser is opened unless asked for (--browser or BROWSER): the URL is printed.
  const browser = args.some((arg) => /^(-b|--browser)(=|$)/.test(arg)) || env.BROWSER ? [] : ["--browser", "none"];
  return [cli, "studio", "--config", STUDIO_CONFIG, "--url", studioDatabaseUrl(databaseUrl), ...browser, ...args];
}

async function main(): Promise<void> {
  let command: string[];
  try {
    command = studioCommand(process.env.DATABASE_URL || "file:./data/atrium.db", process.argv.slice(2));
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  }
  // CHECKPOINT_DISABLE: no update check (Prisma's telemetry request would wait for a network that is not there).
  const child = spawn(process.execPath, command, { stdio: "inherit", env: { ...process.env, CHECKPOINT_DISABLE: "1" } });
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

if (process.argv[1] && path.resolve(process.argv[1]) === import.meta.filename) await main();
