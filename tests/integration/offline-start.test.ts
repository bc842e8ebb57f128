/**
 * `npm start` from a fresh clone with nothing to download from (docs/decisions/0025a): the README's commands, in a
 * copy of the repository without build/ or data/, while every way out that Prisma or npm would take is a closed
 * loopback port. First `DATABASE_URL=postgresql://… npm start`: it builds, migrates an empty database and serves.
 * (Before, the build ran `prisma generate`, which with a PostgreSQL URL fetched a query engine from Prisma's mirror and
 * failed here.) Then plain `npm start` on the embedded default: it creates and migrates the SQLite file under data/
 * and serves. The second start skips `prestart` (npm's `--ignore-scripts` still runs the script itself): the build
 * reads no database setting, so a second build of the same files would only repeat the first (docs/decisions/0036).
 * This file is about both engines at once, so it runs in the SQLite project only (vitest.config.ts).
 */
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, PROJECT_ROOT } from "../../scripts/lib/server-process.ts";
import { createTestDatabase, dropTestDatabase } from "../helpers/postgres.ts";

/** Nothing listens on port 9 of the loopback interface (discard is not run): every request to it is refused at once. */
const CLOSED = "http://127.0.0.1:9";
/** What a fresh clone does not have (or what only this machine's runs left behind). */
const NOT_IN_A_CLONE = new Set(["node_modules", "build", "data", ".git", ".cache", "test-results"]);
/** Every way out: Prisma's engine mirror, any proxy, the npm registry. */
const OFFLINE = {
  PRISMA_ENGINES_MIRROR: CLOSED,
  HTTP_PROXY: CLOSED,
  HTTPS_PROXY: CLOSED,
  http_proxy: CLOSED,
  https_proxy: CLOSED,
  npm_config_registry: CLOSED,
  npm_config_offline: "true",
};

let clone: string;
let postgresUrl: string;
beforeAll(async () => {
  clone = mkdtempSync(path.join(os.tmpdir(), "atrium-clone-"));
  cpSync(PROJECT_ROOT, clone, { recursive: true, filter: (source) => !NOT_IN_A_CLONE.has(path.relative(PROJECT_ROOT, source)) });
  // The installed packages, as `npm install` (from the registry, before any of this) left them.
  symlinkSync(path.join(PROJECT_ROOT, "node_modules"), path.join(clone, "node_modules"));
  // An empty database: the start must migrate it.
  postgresUrl = await createTestDatabase({ migrated: false });
});
afterAll(async () => {
  if (postgresUrl) await dropTestDatabase(postgresUrl);
  rmSync(clone, { recursive: true, force: true });
});

type Started = { output: string; issuer: string };

/** Runs `npm <args>` in the clone until the server says it listens, checks that it answers, and stops it. */
async function startAndStop(args: string[], env: NodeJS.ProcessEnv): Promise<Started> {
  const port = await freePort();
  // Its own process group, so that the test stops npm, its shell and the server together.
  const child = spawn("npm", args, { cwd: clone, detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...env, PORT: String(port), HOST: "127.0.0.1", ...OFFLINE } });
  let output = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  try {
    const listening = await new Promise<{ port: number; issuer: string }>((resolve, reject) => {
      const scan = (chunk: Buffer) => {
        output += chunk.toString();
        const line = output.split("\n").find((candidate) => candidate.includes('"event":"listening"'));
        if (line) resolve(JSON.parse(line) as { port: number; issuer: string });
      };
      child.stdout.on("data", scan);
      child.stderr.on("data", scan);
      void exited.then((code) => reject(new Error(`npm ${args.join(" ")} exited (${code}) before listening:\n${output}`)));
    });
    expect(listening.port).toBe(port);
    const metadata = await fetch(`http://127.0.0.1:${port}/.well-known/oauth-authorization-server`);
    expect(metadata.status).toBe(200);
    expect(((await metadata.json()) as { issuer: string }).issuer).toBe(listening.issuer);
    return { output, issuer: listening.issuer };
  } finally {
    if (child.exitCode === null) process.kill(-child.pid!, "SIGTERM");
    await exited;
  }
}

/** The test process's environment without a database setting: what a newcomer's shell has. */
function newcomerEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.DATABASE_URL;
  return env;
}

describe("npm start from a fresh clone, offline", () => {
  it("builds, migrates an empty PostgreSQL database and serves; then serves on a new SQLite file, without downloading anything", { timeout: 300_000 }, async () => {
    const postgres = await startAndStop(["start"], { ...newcomerEnv(), DATABASE_URL: postgresUrl });
    expect(postgres.output).toContain("remix vite:build");
    expect(postgres.output).not.toMatch(/prisma generate|ECONNREFUSED/);

    expect(existsSync(path.join(clone, "data"))).toBe(false);
    const sqlite = await startAndStop(["start", "--ignore-scripts"], newcomerEnv());
    expect(sqlite.output).not.toContain("vite:build");
    expect(sqlite.output).not.toMatch(/prisma generate|ECONNREFUSED/);
    expect(existsSync(path.join(clone, "data", "atrium.db"))).toBe(true);
  });
});
