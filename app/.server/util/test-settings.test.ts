import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { hashPassword, setTestPasswordCost, verifyPassword } from "../accounts/password.ts";
import { ConfigError, loadConfig, unsafeConfigWarnings } from "../config.ts";
import { testClock } from "./test-clock.ts";

// docs/decisions/0036: the test servers' own settings, a clock moved through a file instead of sleeping and cheaper
// password hashes; never in production.

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

function clockFile(): string {
  dir = mkdtempSync(path.join(os.tmpdir(), "atrium-clock-test-"));
  return path.join(dir, "offset-ms");
}

describe("ATRIUM_TEST_CLOCK_FILE", () => {
  it("is refused, loudly, for an https issuer (production) and for http on a host other than loopback", () => {
    for (const PUBLIC_URL of ["https://pds.example.com", "https://localhost:3000"]) {
      expect(() => loadConfig({ PUBLIC_URL, ATRIUM_TEST_CLOCK_FILE: "/tmp/clock" })).toThrow(ConfigError);
      expect(() => loadConfig({ PUBLIC_URL, ATRIUM_TEST_CLOCK_FILE: "/tmp/clock" })).toThrow(/ATRIUM_TEST_CLOCK_FILE.*never set it in production/);
    }
    // (http elsewhere than loopback is refused by the issuer's own rule already.)
    expect(() => loadConfig({ PUBLIC_URL: "http://pds.example.com", ATRIUM_TEST_CLOCK_FILE: "/tmp/clock" })).toThrow(ConfigError);
  });

  it("is taken, with a warning, for a loopback http issuer (a test server), and is off unless set", () => {
    const config = loadConfig({ PUBLIC_URL: "http://127.0.0.1:4000", ATRIUM_TEST_CLOCK_FILE: "/tmp/clock" });
    expect(config.testClockFile).toBe("/tmp/clock");
    expect(unsafeConfigWarnings(config).join("\n")).toMatch(/ATRIUM_TEST_CLOCK_FILE is set.*never set it in production/);
    expect(loadConfig({ PUBLIC_URL: "http://127.0.0.1:4000" }).testClockFile).toBeUndefined();
  });
});

describe("testClock", () => {
  it("is the real clock plus the file's milliseconds, read at every reading; a missing file adds nothing", () => {
    const file = clockFile();
    let real = 1_000_000;
    const now = testClock(file, () => real);
    expect(now()).toBe(1_000_000);
    writeFileSync(file, "2500");
    expect(now()).toBe(1_002_500);
    real += 10;
    writeFileSync(file, "-500\n");
    expect(now()).toBe(999_510);
  });

  it("refuses a file that does not hold a whole number of milliseconds", () => {
    const file = clockFile();
    const now = testClock(file, () => 0);
    for (const text of ["", "1.5", "soon"]) {
      writeFileSync(file, text);
      expect(() => now()).toThrow(/whole number of milliseconds/);
    }
  });
});

describe("ATRIUM_TEST_FAST_PASSWORD_HASHES", () => {
  it("is refused, loudly, for any issuer but plain http on loopback", () => {
    for (const PUBLIC_URL of ["https://pds.example.com", "https://127.0.0.1:3000"]) {
      expect(() => loadConfig({ PUBLIC_URL, ATRIUM_TEST_FAST_PASSWORD_HASHES: "1" })).toThrow(/ATRIUM_TEST_FAST_PASSWORD_HASHES.*never set it in production/);
    }
    const config = loadConfig({ PUBLIC_URL: "http://127.0.0.1:4000", ATRIUM_TEST_FAST_PASSWORD_HASHES: "1" });
    expect(config.testFastPasswordHashes).toBe(true);
    expect(unsafeConfigWarnings(config).join("\n")).toMatch(/ATRIUM_TEST_FAST_PASSWORD_HASHES is on.*never set it in production/);
    expect(loadConfig({ PUBLIC_URL: "https://pds.example.com", ATRIUM_PLC_ROTATION_KEY: "1".repeat(64), ATRIUM_KEY_ENCRYPTION_KEY: "2".repeat(64) }).testFastPasswordHashes).toBe(false);
  });

  it("hashes at the production cost until a test server asks; then cheaper, and both kinds verify", async () => {
    // (This file's own process: password.test.ts checks the production cost on its own too.)
    const production = await hashPassword("correct horse battery");
    expect(production.split("$").slice(0, 4)).toEqual(["scrypt", "32768", "8", "1"]);
    setTestPasswordCost();
    const cheap = await hashPassword("correct horse battery").finally(() => setTestPasswordCost(false));
    expect(cheap.split("$").slice(0, 4)).toEqual(["scrypt", "1024", "8", "1"]);
    expect(await verifyPassword("correct horse battery", production)).toBe(true);
    expect(await verifyPassword("correct horse battery", cheap)).toBe(true);
    expect(await verifyPassword("wrong horse battery", cheap)).toBe(false);
    expect((await hashPassword("correct horse battery")).split("$")[1]).toBe("32768");
  });
});
