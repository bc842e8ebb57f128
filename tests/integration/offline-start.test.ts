/**
 * `npm start` from a fresh clone with nothing to download from (docs/decisions/0025a): the README's command, on the
 * engine this Vitest project runs (SQLite, or PostgreSQL with `DATABASE_URL=postgresql://…`), in a copy of the
 * repository without build/ or data/, while every way out that Prisma or npm would take is a closed loopback port.
 * It builds, migrates a new database, and serves. (Before, the build ran `prisma generate`, which with a PostgreSQL
 * URL fetched a query engine from Prisma's mirror and failed here.)
 */
import { spawn } from "node:child_process";
import { cpSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, PROJECT_ROOT } from "../../scripts/lib/server-process.ts";
import { createServerDatabase, type ServerDatabase } from "../helpers/test-database.ts";

/** Nothing listens on port 9 of the loopback interface (discard is not run): every request to it is refused at once. */
const CLOSED = "http://127.0.0.1:9";
/** What a fresh clone does not have (or what only this machine's runs left behind). */
const NOT_IN_A_CLONE = new Set(["node_modules", "build", "data", ".git", ".cache", "test-results"]);

let clone: string;
let database: ServerDatabase;
beforeAll(async () => {
  clone = mkdtempSync(path.join(os.tmpdir(), "atrium-clone-"));
  cpSync(PROJECT_ROOT, clone, { recursive: true, filter: (source) => !NOT_IN_A_CLONE.has(path.relative(PROJECT_ROOT, source)) });
  // The installed packages, as `npm install` (from the registry, before any of this) left them.
  symlinkSync(path.join(PROJECT_ROOT, "node_modules"), path.join(clone, "node_modules"));
  database = await createServerDatabase();
});
afterAll(async () => {
  await database?.remove();
  rmSync(clone, { recursive: true, force: true });
});

describe("npm start from a fresh clone, offline", () => {
  it("builds, migrates and serves without downloading anything", { timeout: 300_000 }, async () => {
    const port = await freePort();
    // Its own process group, so that the test stops npm, its shell and the server together.
    const child = spawn("npm", ["start"], {
      cwd: clone,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        PORT: String(port),
        HOST: "127.0.0.1",
        PRISMA_ENGINES_MIRROR: CLOSED,
        HTTP_PROXY: CLOSED,
        HTTPS_PROXY: CLOSED,
        http_proxy: CLOSED,
        https_proxy: CLOSED,
        npm_config_registry: CLOSED,
        npm_config_offline: "true",
      },
    });
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
        void exited.then((code) => reject(new Error(`npm start exited (${code}) before listening:\n${output}`)));
      });
      expect(listening.port).toBe(port);
      const metadata = await fetch(`http://127.0.0.1:${port}/.well-known/oauth-authorization-server`);
      expect(metadata.status).toBe(200);
      expect(((await metadata.json()) as { issuer: string }).issuer).toBe(listening.issuer);
      expect(output).not.toMatch(/prisma generate|ECONNREFUSED/);
    } finally {
      if (child.exitCode === null) process.kill(-child.pid!, "SIGTERM");
      await exited;
    }
  });
});
