import { readFileSync } from "node:fs";

/**
 * The server's clock when ATRIUM_TEST_CLOCK_FILE is set (tests only, refused for any issuer but plain http on
 * loopback: app/.server/config.ts; docs/decisions/0036), read at every reading of the clock, so that a test moves a
 * running server's time by rewriting the file instead of sleeping: the real clock plus the whole number of
 * milliseconds the file holds, or, when it holds `=` and a whole number, that instant and no other (a clock that stands
 * still, for a test whose outcome must not depend on how long the machine takes). A missing file counts as 0;
 * anything else is an error.
 */
export function testClock(file: string, realNow: () => number = Date.now): () => number {
  return () => {
    const reading = readingIn(file);
    return "at" in reading ? reading.at : realNow() + reading.offset;
  };
}

function readingIn(file: string): { offset: number } | { at: number } {
  let text: string;
  try {
    text = readFileSync(file, "utf8").trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { offset: 0 };
    throw error;
  }
  if (/^=\d+$/.test(text)) return { at: Number(text.slice(1)) };
  if (!/^-?\d+$/.test(text)) throw new Error(`ATRIUM_TEST_CLOCK_FILE (${file}) must hold a whole number of milliseconds, or = and an instant, got ${JSON.stringify(text)}`);
  return { offset: Number(text) };
}
