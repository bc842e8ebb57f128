import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "./lib/server-process.ts";
import { studioCommand, studioDatabaseUrl } from "./studio.ts";

const versionOf = (packageFolder: string) => (JSON.parse(readFileSync(path.join(packageFolder, "package.json"), "utf8")) as { version: string }).version;

describe("npm run studio: Prisma 7's Studio beside Prisma 6.19's CLI", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-studio-url-"));
  const file = path.join(dir, "atrium.db");
  writeFileSync(file, "");
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("names a SQLite file by an absolute file:// URL, relative paths taken from the working folder", () => {
    expect(studioDatabaseUrl("file:./atrium.db", dir)).toBe(`file://${file}`);
    expect(studioDatabaseUrl(`file:${file}`, "/")).toBe(`file://${file}`);
    expect(studioDatabaseUrl("file:./atrium.db?connection_limit=1", dir)).toBe(`file://${file}`);
  });

  it("passes PostgreSQL URLs through, and refuses a missing file or another scheme", () => {
    expect(studioDatabaseUrl("postgresql://atrium@127.0.0.1:5432/atrium")).toBe("postgresql://atrium@127.0.0.1:5432/atrium");
    expect(studioDatabaseUrl("postgres://atrium@db/atrium?sslmode=require")).toBe("postgres://atrium@db/atrium?sslmode=require");
    expect(() => studioDatabaseUrl("file:./missing.db", dir)).toThrow(`There is no database at ${path.join(dir, "missing.db")}`);
    expect(() => studioDatabaseUrl("mysql://db/atrium")).toThrow(/must be file:/);
  });

  it("runs Prisma 7.10's CLI from tools/prisma-studio, while the project's `prisma` command stays Prisma 6.19", () => {
    const [cli, ...args] = studioCommand(`file:${file}`, ["--port", "5555"], {});
    expect(versionOf(path.resolve(path.dirname(cli!), ".."))).toBe("7.10.1");
    expect(args).toEqual(["studio", "--config", path.join(PROJECT_ROOT, "tools", "prisma-studio", "prisma.config.ts"), "--url", `file://${file}`, "--browser", "none", "--port", "5555"]);
    // npm links the bins of direct dependencies only: Prisma 7's `prisma` must never take this place.
    const bin = realpathSync(path.join(PROJECT_ROOT, "node_modules", ".bin", "prisma"));
    expect(versionOf(path.resolve(path.dirname(bin), ".."))).toMatch(/^6\.19\./);
  });
});
