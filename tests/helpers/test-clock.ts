import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

export type TestClock = {
  /** Pass to startTestServer: the server reads its clock through this file (ATRIUM_TEST_CLOCK_FILE). */
  env: { ATRIUM_TEST_CLOCK_FILE: string };
  /** Moves the server's clock forward by `ms`; the server's next reading of its clock sees it. */
  advance(ms: number): void;
  /** Stops the server's clock where it is now: it reads this instant until `advance` moves it on (from there). */
  freeze(): void;
  remove(): void;
};

/**
 * A server clock the test moves instead of sleeping (docs/decisions/0036): the server's time is the real time plus
 * the offset this writes (app/.server/util/test-clock.ts), so a test waits out a delay in no time at all, whatever
 * the load of the machine.
 *
 *   const clock = testClock();
 *   server = await startTestServer({ ...clock.env });
 *   clock.advance(2 * SECOND);
 */
export function testClock(): TestClock {
  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-clock-"));
  const file = path.join(dir, "offset-ms");
  let offset = 0;
  let frozenAt: number | undefined;
  // Written beside and renamed over: a server reading the file at that moment sees the old offset or the new, never half.
  const write = () => {
    writeFileSync(`${file}.next`, frozenAt === undefined ? String(offset) : `=${frozenAt}`);
    renameSync(`${file}.next`, file);
  };
  write();
  return {
    env: { ATRIUM_TEST_CLOCK_FILE: file },
    advance(ms) {
      if (frozenAt === undefined) offset += Math.round(ms);
      else frozenAt += Math.round(ms);
      write();
    },
    freeze() {
      frozenAt ??= Date.now() + offset;
      write();
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
