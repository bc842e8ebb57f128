import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrateDatabase } from "../../app/.server/db/migrate.ts";
import { freePort, PROJECT_ROOT } from "../../scripts/lib/server-process.ts";
import { createTestDatabase, dropTestDatabase, withClient } from "../helpers/postgres.ts";
import { E2E_TIMEOUT, releaseBrowser, sharedBrowser, visibleText } from "./support.ts";

/**
 * `npm run studio` (scripts/studio.ts: Prisma 7's Studio, docs/decisions/0016)
 * against each engine, in Chromium: the page lists the tables, opens Grant and
 * shows the row written with plain SQL. Nothing but the Studio server on
 * 127.0.0.1 is reachable from the page.
 */

type Studio = { url: string; pid: number; output(): string; stop(): Promise<void> };

/** Starts scripts/studio.ts as `npm run studio` does (from the project folder) in a process group of its own, and waits for its "running" line. */
async function startStudio(databaseUrl: string): Promise<Studio> {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", path.join(PROJECT_ROOT, "scripts", "studio.ts"), "--port", String(port)], {
    cwd: PROJECT_ROOT,
    detached: true,
    env: { ...process.env, DATABASE_URL: databaseUrl, BROWSER: "none" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const pid = child.pid!;
  const groupAlive = () => {
    try {
      process.kill(-pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const stop = async () => {
    // The whole group: scripts/studio.ts and the Prisma CLI it started.
    if (groupAlive()) process.kill(-pid, "SIGTERM");
    const kill = setTimeout(() => groupAlive() && process.kill(-pid, "SIGKILL"), 5000);
    // scripts/studio.ts exits once the Prisma CLI it started has (it waits for it). A process the CLI started may still be
    // on its way out, the SIGTERM having reached the whole group (seen once in a full run): the group is empty when the
    // last of them has gone, with the SIGKILL above as the safety net.
    await exited;
    while (groupAlive()) await new Promise((resolve) => setTimeout(resolve, 20));
    clearTimeout(kill);
  };
  await new Promise<void>((resolve, reject) => {
    const onData = () => {
      if (output.includes("Prisma Studio is running at")) {
        child.stdout!.off("data", onData);
        resolve();
      }
    };
    child.stdout!.on("data", onData);
    void exited.then(() => reject(new Error(`Studio exited before it was running:\n${output}`)));
  }).catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  return { url: `http://127.0.0.1:${port}`, pid, output: () => output, stop };
}

/** Opens the Grant table in Studio and returns the text of the cell holding `id`, and every request the page tried beyond Studio's server. */
async function grantShownByStudio(browser: Browser, studio: Studio, id: string): Promise<{ cell: string; elsewhere: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  try {
    // Offline, whatever this machine's network: only Studio's own server answers.
    const elsewhere: string[] = [];
    await context.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith(`${studio.url}/`)) return route.continue();
      elsewhere.push(url);
      return route.abort();
    });
    const page = await context.newPage();
    await page.goto(studio.url);
    await page.getByRole("link", { name: "Grant", exact: true }).click();
    await page.waitForURL((url) => url.hash.includes("table=Grant"));
    const cell = await visibleText(page.getByText(id, { exact: true }), 20_000);
    return { cell, elsewhere };
  } finally {
    await context.close();
  }
}

/** Prisma's telemetry ping from the page (Prisma Studio's own, refused here): the one request that may leave. */
const onlyTelemetry = (urls: string[]) => urls.filter((url) => new URL(url).hostname !== "checkpoint.prisma.io");

describe("npm run studio (Prisma Studio 7, offline)", { timeout: E2E_TIMEOUT }, () => {
  let browser: Browser;
  let dir: string;
  const databases: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "atrium-studio-"));
    browser = await sharedBrowser();
  });
  afterAll(async () => {
    await releaseBrowser(browser);
    rmSync(dir, { recursive: true, force: true });
    for (const url of databases) await dropTestDatabase(url);
  });

  it("shows a grant of a SQLite database named by a relative file: URL", async () => {
    const file = path.join(dir, "atrium.db");
    migrateDatabase(file);
    const db = new Database(file);
    const now = Date.now();
    db.prepare(`INSERT INTO "Account" (did, handle, email, passwordHash, signingKey, createdAt, updatedAt) VALUES ('did:plc:studio', 'studio.test', 'studio@example.com', 'x', 'k', ?, ?)`).run(now, now);
    db.prepare(
      `INSERT INTO "Grant" (id, clientId, accountDid, scope, dpopJkt, createdAt, lastUsedAt, expiresAt, endsAt) VALUES ('grant-in-sqlite', 'https://app.example/client.json', 'did:plc:studio', 'atproto', 'jkt', ?, ?, ?, ?)`,
    ).run(now, now, now, now);
    db.close();

    // Relative to the project folder, as the default file:./data/atrium.db is.
    const studio = await startStudio(`file:${path.relative(PROJECT_ROOT, file)}`);
    try {
      const { cell, elsewhere } = await grantShownByStudio(browser, studio, "grant-in-sqlite");
      expect(cell).toBe("grant-in-sqlite");
      expect(onlyTelemetry(elsewhere)).toEqual([]);
    } finally {
      await studio.stop();
    }
    expect(() => process.kill(-studio.pid, 0)).toThrow();
  });

  it("shows a grant of a PostgreSQL database", async () => {
    const url = await createTestDatabase();
    databases.push(url);
    await withClient(url, async (client) => {
      await client.query(
        `INSERT INTO "Account" (did, handle, email, "passwordHash", "signingKey", "createdAt", "updatedAt") VALUES ('did:plc:studio', 'studio.test', 'studio@example.com', 'x', 'k', now(), now())`,
      );
      await client.query(
        `INSERT INTO "Grant" (id, "clientId", "accountDid", scope, "dpopJkt", "createdAt", "lastUsedAt", "expiresAt", "endsAt")
         VALUES ('grant-in-postgresql', 'https://app.example/client.json', 'did:plc:studio', 'atproto', 'jkt', now(), now(), now() + interval '90 days', now() + interval '730 days')`,
      );
    });

    const studio = await startStudio(url);
    try {
      const { cell, elsewhere } = await grantShownByStudio(browser, studio, "grant-in-postgresql");
      expect(cell).toBe("grant-in-postgresql");
      expect(onlyTelemetry(elsewhere)).toEqual([]);
    } finally {
      await studio.stop();
    }
    expect(() => process.kill(-studio.pid, 0)).toThrow();
  });
});
