import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ); 100 on practically every Linux. */
export function clockTicksPerSecond(): number {
  try {
    const value = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());
    if (Number.isFinite(value) && value > 0) return value;
  } catch {
    // getconf missing: fall through to the Linux default.
  }
  return 100;
}

/** utime + stime of a process (all its threads), in clock ticks, from /proc/<pid>/stat. */
export function processCpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name (field 2) is in parentheses and may contain spaces: count fields after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state); utime is field 14, stime field 15.
  return Number(fields[11]) + Number(fields[12]);
}
