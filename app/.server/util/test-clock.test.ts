import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { testClock } from "./test-clock.ts";

/** The server's test clock (docs/decisions/0036): what the file says, read at every reading. */
describe("testClock", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-test-clock-"));
  const file = path.join(dir, "clock");
  const real = () => 1_000_000;
  afterEach(() => rmSync(file, { force: true }));

  it("is the real clock with no file, and the real clock plus the file's offset with one", () => {
    const now = testClock(file, real);
    expect(now()).toBe(1_000_000);
    writeFileSync(file, "2500");
    expect(now()).toBe(1_002_500);
    writeFileSync(file, "-500");
    expect(now()).toBe(999_500);
  });

  it("stands still at the instant the file names after =, whatever the real clock does", () => {
    let realTime = 1_000_000;
    const now = testClock(file, () => realTime);
    writeFileSync(file, "=1800000000000");
    expect(now()).toBe(1_800_000_000_000);
    realTime += 60_000;
    expect(now()).toBe(1_800_000_000_000);
  });

  it("refuses anything else the file holds", () => {
    const now = testClock(file, real);
    for (const text of ["soon", "1.5", "=", "=-5", "= 5"]) {
      writeFileSync(file, text);
      expect(() => now(), text).toThrow(/ATRIUM_TEST_CLOCK_FILE/);
    }
  });
});
