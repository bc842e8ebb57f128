import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

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

type Stat = { ppid: number; ticks: number; childTicks: number };

function readStat(pid: number | string): Stat | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined; // gone meanwhile
  }
  // The command name (field 2) is in parentheses and may contain spaces: count fields after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state); ppid is field 4, utime 14, stime 15, cutime 16, cstime 17.
  return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]), childTicks: Number(fields[13]) + Number(fields[14]) };
}

/** utime + stime of a process (all its threads), in clock ticks, from /proc/<pid>/stat. */
export function processCpuTicks(pid: number): number {
  const stat = readStat(pid);
  if (!stat) throw new Error(`process ${pid} is gone`);
  return stat.ticks;
}

/**
 * CPU of a process and everything under it, in clock ticks: utime + stime of
 * the process and of each living descendant (found by their parent PID in
 * /proc), plus cutime + cstime of each, which hold the CPU of children that
 * have exited and been waited for. So a server's workers (ATRIUM_WORKERS) and a
 * PostgreSQL cluster's backends, which come and go, are all counted, the
 * living and the gone.
 */
export function processTreeCpuTicks(rootPid: number): number {
  return treeTicks(rootPid).total;
}

/** CPU of each child of a process and everything under it (e.g. each worker of a server's primary), clock ticks by child PID. */
export function childTreeCpuTicks(rootPid: number): Map<number, number> {
  return treeTicks(rootPid).byChild;
}

function treeTicks(rootPid: number): { total: number; byChild: Map<number, number> } {
  const stats = new Map<number, Stat>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(entry);
    if (stat) stats.set(Number(entry), stat);
  }
  const root = stats.get(rootPid);
  if (!root) throw new Error(`process ${rootPid} is gone`);
  const children = new Map<number, number[]>();
  for (const [pid, stat] of stats) {
    const siblings = children.get(stat.ppid);
    if (siblings) siblings.push(pid);
    else children.set(stat.ppid, [pid]);
  }
  const sum = (pid: number): number => {
    const stat = stats.get(pid)!;
    return stat.ticks + stat.childTicks + (children.get(pid) ?? []).reduce((total, child) => total + sum(child), 0);
  };
  const byChild = new Map((children.get(rootPid) ?? []).map((child) => [child, sum(child)] as const));
  return { total: sum(rootPid), byChild };
}

/** CPU time every core of the machine spent busy (not idle or waiting for I/O), in clock ticks, from /proc/stat. */
export function machineBusyTicks(): number {
  const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!;
  // cpu user nice system idle iowait irq softirq steal guest guest_nice (guest is already part of user)
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number) as number[];
  return user! + nice! + system! + irq! + softirq! + (steal ?? 0);
}

/**
 * CPU time of a process (all its threads, user and system), in nanoseconds, from the scheduler's own count
 * (/proc/<pid>/task/<tid>/schedstat: time spent on a CPU). Unlike /proc/<pid>/stat's clock ticks (10 ms), exact to the
 * nanosecond for a process that is not running at the moment it is read (a server waiting for its next request), so a
 * batch of a few hundred requests resolves differences of a few microseconds a request. Threads that have exited are
 * not counted (a Node process keeps its threads). Falls back to the clock ticks where the kernel keeps no schedstat.
 */
export function processCpuNanos(pid: number, ticksPerSecond: number): number {
  let total = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ", 1)[0]);
      } catch {
        // the thread ended meanwhile
      }
    }
  } catch {
    throw new Error(`process ${pid} is gone`);
  }
  return total > 0 ? total : (processCpuTicks(pid) * 1e9) / ticksPerSecond;
}
