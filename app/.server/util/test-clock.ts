import { readFileSync } from "node:fs";

/**
 * The server's clock when ATRIUM_TEST_CLOCK_FILE is set (tests only, refused for any issuer but plain http on
 * loopback: app/.server/config.ts; docs/decisions/0036): the real clock plus the whole number of milliseconds the file
 * holds, read at every reading of the clock, so that a test moves a running server's time forward by rewriting the
 * file instead of sleeping. A missing file counts as 0; anything but a whole number is an error.
 */
export function testClock(file: string, realNow: () => number = Date.now): () => number {
  return () => realNow() + offsetIn(file);
}

function offsetIn(file: string): number {
  let text: string;
  try {
    text = readFileSync(file, "utf8").trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw error;
  }
  if (!/^-?\d+$/.test(text)) throw new Error(`ATRIUM_TEST_CLOCK_FILE (${file}) must hold a whole number of milliseconds, got ${JSON.stringify(text)}`);
  return Number(text);
}
