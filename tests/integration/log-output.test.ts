import { spawn } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The logger writes standard output in batches (server/logger.ts, docs/decisions/0035). What it
 * still holds when the process ends is written on the way out, whether the process stops gracefully or crashes; and
 * processes sharing the output (ATRIUM_WORKERS) lose and cut no line. (Writes are kept to PIPE_BUF so that the kernel
 * cannot interleave them; a pipe read as fast as this one rarely shows the difference, so that bound is not what the
 * last test proves.)
 */

const ROOT = path.resolve(import.meta.dirname, "../..");

/** Runs tests/helpers/log-writer.ts to its end: its standard output (once closed) and exit code. */
function runWriter(ending: string, lines: number): Promise<{ stdout: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "tests/helpers/log-writer.ts", ending, String(lines)], { cwd: ROOT, stdio: ["ignore", "pipe", "ignore"] });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ stdout, code }));
  });
}

function parsed(stdout: string): { writer: number; n: number; msg: string }[] {
  return stdout
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { writer: number; n: number; msg: string });
}

describe("log output", () => {
  it("a crash (an uncaught exception) still writes every line logged before it, in order", async () => {
    // Fewer bytes than one batch: without the flush on exit, none of them would be written.
    const { stdout, code } = await runWriter("crash", 3);
    expect(code).not.toBe(0);
    expect(parsed(stdout).map((line) => line.n)).toEqual([0, 1, 2]);
  });

  it("a graceful stop (process.exit) writes every line logged before it, in order", async () => {
    const { stdout, code } = await runWriter("exit", 500);
    expect(code).toBe(0);
    expect(parsed(stdout).map((line) => line.n)).toEqual(Array.from({ length: 500 }, (_, n) => n));
  });

  it("two processes logging at once into one standard output: every line whole, none lost", async () => {
    const { stdout } = await runWriter("workers", 2000);
    const lines = parsed(stdout); // throws on a line cut or interleaved
    for (const writer of [1, 2]) {
      expect(lines.filter((line) => line.writer === writer).map((line) => line.n)).toEqual(Array.from({ length: 2000 }, (_, n) => n));
    }
  });
});
