/**
 * The firehose's cost (docs/decisions/0029), `npx tsx bench/firehose.ts` after a build (`npx remix vite:build`):
 *
 * 1. CPU per delivered event: 100 live subscribers on one server process, 1,000 one-record #commit events appended
 *    by another process (this one) to the shared event log; the server's utime + stime (/proc/<pid>/stat) from the
 *    first append until every subscriber has all 1,000, divided by the 100,000 deliveries.
 * 2. Resident memory with one subscriber that never reads: the server's VmRSS before it subscribes and at its
 *    highest while 32 KiB events are appended until the server cuts it off (ConsumerTooSlow), with the default
 *    8 MiB bound.
 *
 * The server runs the real server module (server.ts startServer) on an SQLite event log shared with this process
 * (tests/helpers/firehose-process.ts), the stand-in for the server's own SQL log until the repository appends to it:
 * what is measured is the firehose's side (reading the log, framing once, sending to every subscriber), not commits.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { WebSocket } from "ws";
import { freePort, PROJECT_ROOT } from "../scripts/lib/server-process.ts";
import { commitEvent } from "../tests/helpers/repo-events.ts";
import { SqliteEventLog } from "../tests/helpers/sqlite-event-log.ts";
import { clockTicksPerSecond, processCpuTicks } from "./lib/cpu.ts";

const SUBSCRIBERS = 100;
const EVENTS = 1_000;
const DID = "did:plc:bench222222222222222222222";

type Server = { child: ChildProcess; port: number; pid: number; exited: Promise<void> };

async function startServerProcess(dir: string, logFile: string): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", "tsx", "tests/helpers/firehose-process.ts"], {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      NODE_ENV: "production",
      PORT: String(port),
      HOST: "127.0.0.1",
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      DATABASE_URL: `file:${path.join(dir, "atrium.db")}`,
      ATRIUM_TEST_EVENT_LOG: logFile,
      ATRIUM_LOG_LEVEL: "warn",
      ATRIUM_FIREHOSE_MAX_CONNECTIONS_PER_ADDRESS: String(SUBSCRIBERS + 10),
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let output = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('"event":"listening"')) resolve();
    });
    void exited.then(() => reject(new Error(`the server exited before listening:\n${output}`)));
  });
  return { child, port, pid: child.pid!, exited };
}

function residentBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((text) => text.startsWith("VmRSS:"))!;
  return Number(/(\d+)/.exec(line)![1]) * 1024;
}

/** A subscriber that counts messages; `reached(n)` resolves once it has n. */
function subscriber(url: string): { socket: WebSocket; opened: Promise<void>; reached(n: number): Promise<void>; closed: Promise<void> } {
  const socket = new WebSocket(url);
  let count = 0;
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  socket.on("message", () => {
    count++;
    for (const waiter of waiters.filter((candidate) => candidate.n <= count)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  });
  return {
    socket,
    opened: new Promise((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", reject);
    }),
    reached: (n) => (count >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }))),
    closed: new Promise((resolve) => socket.once("close", () => resolve())),
  };
}

async function fanOut(server: Server, log: SqliteEventLog, ticksPerSecond: number): Promise<{ cpuMicrosPerDelivery: number; seconds: number }> {
  const url = `ws://127.0.0.1:${server.port}/xrpc/com.atproto.sync.subscribeRepos`;
  const subscribers = Array.from({ length: SUBSCRIBERS }, () => subscriber(url));
  await Promise.all(subscribers.map((made) => made.opened));
  const events = [];
  for (let n = 1; n <= EVENTS; n++) events.push(await commitEvent(DID, n));
  const startTicks = processCpuTicks(server.pid);
  const started = performance.now();
  // One event per append, as commits arrive: the server reads them at its poll interval, in batches.
  for (const event of events) await log.append([event], Date.now());
  await Promise.all(subscribers.map((made) => made.reached(EVENTS)));
  const seconds = (performance.now() - started) / 1000;
  const ticks = processCpuTicks(server.pid) - startTicks;
  for (const made of subscribers) made.socket.close();
  await Promise.all(subscribers.map((made) => made.closed));
  return { cpuMicrosPerDelivery: ((ticks / ticksPerSecond) * 1e6) / (SUBSCRIBERS * EVENTS), seconds };
}

/**
 * Events of 32 KiB appended while one subscriber never reads: 144 MiB, many times the bound and the kernel's buffers.
 * The highest RSS is reported after the first third and after all: bounded memory shows as the same figure.
 */
const STUCK_EVENTS = 4_500;

async function neverReads(server: Server, log: SqliteEventLog, firstN: number): Promise<{ before: number; highestAtThird: number; highest: number; closeCode: number }> {
  const before = residentBytes(server.pid);
  const url = `ws://127.0.0.1:${server.port}/xrpc/com.atproto.sync.subscribeRepos`;
  const stuck = subscriber(url);
  await stuck.opened;
  stuck.socket.pause();
  let closeCode = 0;
  stuck.socket.once("close", (code) => (closeCode = code));
  // A reading subscriber beside it: once it has an event, the server has handed that event to the stuck one too.
  const witness = subscriber(url);
  await witness.opened;
  let highest = before;
  let highestAtThird = before;
  // In appends of 50 (the server reads another process's appends every poll interval): the whole run stays well
  // inside the 30 s heartbeat, which would otherwise drop the stuck subscriber for not answering pings first.
  for (let appended = 0; appended < STUCK_EVENTS; appended += 50) {
    for (let n = 1; n <= 50; n++) await log.append([await commitEvent(DID, firstN + appended + n, 32 * 1024)], Date.now());
    await witness.reached(appended + 50);
    highest = Math.max(highest, residentBytes(server.pid));
    if (appended + 50 <= STUCK_EVENTS / 3) highestAtThird = highest;
  }
  // Reading again, it gets what was queued before the cut, then the error frame and the close (1008 when cut off).
  stuck.socket.resume();
  await stuck.closed;
  witness.socket.close();
  await witness.closed;
  return { before, highestAtThird, highest, closeCode };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "atrium-bench-firehose-"));
  const logFile = path.join(dir, "events.db");
  const log = new SqliteEventLog(logFile);
  const server = await startServerProcess(dir, logFile);
  try {
    const ticksPerSecond = clockTicksPerSecond();
    // A first round warms the server up (V8 optimises the delivery path); the second is measured.
    await fanOut(server, log, ticksPerSecond);
    const fan = await fanOut(server, log, ticksPerSecond);
    console.log(`${SUBSCRIBERS} subscribers × ${EVENTS} events: ${fan.cpuMicrosPerDelivery.toFixed(2)} µs of server CPU per delivered event (${fan.seconds.toFixed(2)} s)`);
    const memory = await neverReads(server, log, 2 * EVENTS);
    const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
    console.log(
      `one subscriber that never reads, ${STUCK_EVENTS} events of 32 KiB appended: server RSS ${mib(memory.before)} MiB before, at most ${mib(memory.highestAtThird)} MiB after a third, ${mib(memory.highest)} MiB after all ` +
        `(bound per subscriber: 8 MiB); ${memory.closeCode === 1008 ? "cut off with ConsumerTooSlow" : `closed with ${memory.closeCode}, not cut off`}`,
    );
  } finally {
    server.child.kill("SIGTERM");
    await server.exited;
    log.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
