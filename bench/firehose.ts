/**
 * The firehose's cost (docs/decisions/0029), part of `npm run bench` (bench/run.ts) on both engines; alone:
 * `npx tsx bench/firehose.ts [--engine sqlite|postgresql|both]` after `npm run build`.
 *
 * 1. CPU per delivered event: 100 live subscribers on one server process (the production build), 1,000 one-record
 *    #commit events appended by another process (this one) to the server's own event log (the "RepoEvent" table
 *    of its database, app/.server/stores/sql-event-log.ts); the server's utime + stime (/proc/<pid>/stat) from the
 *    first append until every subscriber has all 1,000, divided by the 100,000 deliveries.
 * 2. Resident memory with one subscriber that never reads: the server's VmRSS before it subscribes and at its
 *    highest while 32 KiB events are appended until the server cuts it off (ConsumerTooSlow), with the default
 *    8 MiB bound.
 * 3. Resident memory with 8 subscribers that replay from cursor=0 and never read (docs/decisions/0044): 600 events
 *    of 96 KiB in the log; the server's VmRSS before they subscribe and at its highest while they are stalled (their
 *    kernel buffers full), then they read and must each get all 600. Alone: `--only replay`.
 *
 * The events are appended directly rather than made by commits, so that the figure is the firehose's side (reading
 * the log, framing once, sending to every subscriber), not the commits' (bench/repo-commit.ts measures those).
 */
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { WebSocket } from "ws";
import { PostgresDatabase } from "../app/.server/db/postgres-database.ts";
import type { Database } from "../app/.server/db/sql.ts";
import { SqliteDatabase } from "../app/.server/db/sqlite-database.ts";
import { SqlEventLog } from "../app/.server/stores/sql-event-log.ts";
import type { NewEvent } from "../app/.server/sync/event-log.ts";
import { commitEvent } from "../tests/helpers/repo-events.ts";
import { clockTicksPerSecond, processCpuTicks } from "./lib/cpu.ts";
import { engineName, forEachEngine } from "./lib/engines.ts";
import type { BenchPostgres } from "./lib/postgres.ts";
import { startServer, type BenchServer } from "./lib/server.ts";
import { round } from "./lib/stats.ts";

const SUBSCRIBERS = 100;
const EVENTS = 1_000;
const DID = "did:plc:bench222222222222222222222";
const RETENTION_MS = 72 * 3600_000;

export type FirehoseResult = {
  engine: "sqlite" | "postgresql";
  subscribers: number;
  events: number;
  cpuMicrosPerDelivery: number;
  seconds: number;
  neverReads: { events: number; eventBytes: number; rssBeforeMiB: number; rssHighestAtThirdMiB: number; rssHighestMiB: number; cutOff: boolean; closeCode: number; seconds: number };
  replays: ReplayResult;
};

export type ReplayResult = { subscribers: number; events: number; eventBytes: number; rssBeforeMiB: number; rssHighestMiB: number; allReceived: boolean };

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

const firehoseUrl = (server: BenchServer) => `${server.issuer.replace(/^http/, "ws")}/xrpc/com.atproto.sync.subscribeRepos`;

async function fanOut(server: BenchServer, log: SqlEventLog, first: number): Promise<{ cpuMicrosPerDelivery: number; seconds: number }> {
  const subscribers = Array.from({ length: SUBSCRIBERS }, () => subscriber(firehoseUrl(server)));
  await Promise.all(subscribers.map((made) => made.opened));
  const events: NewEvent[] = [];
  for (let n = 1; n <= EVENTS; n++) events.push(await commitEvent(DID, first + n));
  const startTicks = processCpuTicks(server.pid);
  const started = performance.now();
  // One event per append, as commits arrive: the server reads another process's appends at its poll interval.
  for (const event of events) await log.append([event], Date.now());
  await Promise.all(subscribers.map((made) => made.reached(EVENTS)));
  const seconds = (performance.now() - started) / 1000;
  const ticks = processCpuTicks(server.pid) - startTicks;
  for (const made of subscribers) made.socket.close();
  await Promise.all(subscribers.map((made) => made.closed));
  return { cpuMicrosPerDelivery: ((ticks / clockTicksPerSecond()) * 1e6) / (SUBSCRIBERS * EVENTS), seconds };
}

/**
 * Events of 32 KiB appended while one subscriber never reads: 144 MiB, many times the bound and the kernel's buffers.
 * The highest RSS is reported after the first third and after all: bounded memory shows as the same figure.
 */
const STUCK_EVENTS = 4_500;
const STUCK_EVENT_BYTES = 32 * 1024;

async function neverReads(server: BenchServer, log: SqlEventLog, first: number): Promise<FirehoseResult["neverReads"]> {
  const before = residentBytes(server.pid);
  const stuck = subscriber(firehoseUrl(server));
  await stuck.opened;
  stuck.socket.pause();
  let closeCode = 0;
  stuck.socket.once("close", (code) => (closeCode = code));
  // A reading subscriber beside it: once it has an event, the server has handed that event to the stuck one too.
  const witness = subscriber(firehoseUrl(server));
  await witness.opened;
  let highest = before;
  let highestAtThird = before;
  const started = performance.now();
  // 50 events per append (one transaction): the whole run stays well inside the 30 s heartbeat, which would
  // otherwise drop the stuck subscriber for not answering pings before its queue reaches the bound (on PostgreSQL a
  // durable commit per event takes longer than that).
  for (let appended = 0; appended < STUCK_EVENTS; appended += 50) {
    const events: NewEvent[] = [];
    for (let n = 1; n <= 50; n++) events.push(await commitEvent(DID, first + appended + n, STUCK_EVENT_BYTES));
    await log.append(events, Date.now());
    await witness.reached(appended + 50);
    highest = Math.max(highest, residentBytes(server.pid));
    if (appended + 50 <= STUCK_EVENTS / 3) highestAtThird = highest;
  }
  // Reading again, it gets what was queued before the cut, then the error frame and the close (1008 when cut off).
  stuck.socket.resume();
  await stuck.closed;
  witness.socket.close();
  await witness.closed;
  const mib = (bytes: number) => round(bytes / 1024 / 1024, 1);
  return { events: STUCK_EVENTS, eventBytes: STUCK_EVENT_BYTES, rssBeforeMiB: mib(before), rssHighestAtThirdMiB: mib(highestAtThird), rssHighestMiB: mib(highest), cutOff: closeCode === 1008, closeCode, seconds: round((performance.now() - started) / 1000, 1) };
}

const REPLAYERS = 8;
const REPLAYED_EVENTS = 600;
const REPLAYED_EVENT_BYTES = 96 * 1024;

/**
 * Eight subscribers replay a log of large events from cursor=0 and never read: what the server holds for them is its
 * resident memory once they are stalled. The highest RSS is taken while it still moves (sampled every 100 ms, until it
 * has not risen for 3 s), well inside the 30 s heartbeat that would drop them. Then they read, and each must get
 * every event.
 */
async function replaysNeverRead(server: BenchServer, log: SqlEventLog, first: number): Promise<ReplayResult> {
  const event = await commitEvent(DID, first + 1, REPLAYED_EVENT_BYTES);
  const [firstSeq] = await log.append(Array.from({ length: REPLAYED_EVENTS }, () => event), Date.now());
  const before = residentBytes(server.pid);
  const stuck = Array.from({ length: REPLAYERS }, () => subscriber(`${firehoseUrl(server)}?cursor=${firstSeq! - 1}`));
  await Promise.all(stuck.map((made) => made.opened.then(() => made.socket.pause())));
  let highest = before;
  for (let lastRise = performance.now(); performance.now() - lastRise < 3_000; ) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = residentBytes(server.pid);
    if (now > highest) {
      highest = now;
      lastRise = performance.now();
    }
  }
  for (const made of stuck) made.socket.resume();
  const received = await Promise.race([
    Promise.all(stuck.map((made) => made.reached(REPLAYED_EVENTS))).then(() => true),
    Promise.all(stuck.map((made) => made.closed)).then(() => false),
  ]);
  for (const made of stuck) made.socket.close();
  await Promise.all(stuck.map((made) => made.closed));
  const mib = (bytes: number) => round(bytes / 1024 / 1024, 1);
  return { subscribers: REPLAYERS, events: REPLAYED_EVENTS, eventBytes: REPLAYED_EVENT_BYTES, rssBeforeMiB: mib(before), rssHighestMiB: mib(highest), allReceived: received };
}

/** A fresh server and database on one engine, and the server's own event log opened from this process. */
async function onFreshServer<T>(options: { postgres?: BenchPostgres }, measure: (server: BenchServer, log: SqlEventLog) => Promise<T>): Promise<T> {
  const databaseUrl = options.postgres ? await options.postgres.createDatabase(`atrium_firehose_${Date.now()}`) : undefined;
  const env = { ATRIUM_FIREHOSE_MAX_CONNECTIONS_PER_ADDRESS: String(SUBSCRIBERS + 10), ATRIUM_FIREHOSE_UPGRADES_PER_MINUTE: "100000" };
  const server = await startServer({ databaseUrl, env });
  // This process appends to the server's own log, in its database (the server has migrated it by now).
  const db: Database = options.postgres ? new PostgresDatabase(server.databaseUrl, { poolSize: 2 }) : new SqliteDatabase(server.databaseUrl.replace(/^file:/, ""));
  try {
    return await measure(server, new SqlEventLog(db, RETENTION_MS));
  } finally {
    await db.close();
    await server.stop();
  }
}

/** One engine: a warm-up round, the measured round, then the subscriber that never reads and the replays that never read. */
export function measureFirehose(options: { postgres?: BenchPostgres } = {}): Promise<FirehoseResult> {
  return onFreshServer(options, async (server, log) => {
    await fanOut(server, log, 0); // V8 optimises the delivery path in this round
    const fan = await fanOut(server, log, EVENTS);
    const memory = await neverReads(server, log, 2 * EVENTS);
    const replays = await replaysNeverRead(server, log, 3 * EVENTS);
    const engine = options.postgres ? "postgresql" : "sqlite";
    return { engine, subscribers: SUBSCRIBERS, events: EVENTS, cpuMicrosPerDelivery: round(fan.cpuMicrosPerDelivery, 2), seconds: round(fan.seconds, 2), neverReads: memory, replays };
  });
}

/** The replays that never read alone (`--only replay`), on a fresh server. */
export function measureReplays(options: { postgres?: BenchPostgres } = {}): Promise<ReplayResult> {
  return onFreshServer(options, (server, log) => replaysNeverRead(server, log, 0));
}

export function describeReplays(r: ReplayResult): string {
  return (
    `${r.subscribers} subscribers replaying ${r.events} events of ${r.eventBytes / 1024} KiB from cursor=0 and never reading: server RSS ${r.rssBeforeMiB} MiB before, ` +
    `at most ${r.rssHighestMiB} MiB while stalled (+${round(r.rssHighestMiB - r.rssBeforeMiB, 1)} MiB); ${r.allReceived ? "then each received every event" : "NOT every event received"}`
  );
}

export function describeFirehose(result: FirehoseResult): string {
  const m = result.neverReads;
  return (
    `firehose, ${result.subscribers} subscribers × ${result.events} events: ${result.cpuMicrosPerDelivery.toFixed(2)} µs of server CPU per delivered event (${result.seconds.toFixed(2)} s); ` +
    `one subscriber that never reads, ${m.events} events of ${m.eventBytes / 1024} KiB: server RSS ${m.rssBeforeMiB} MiB before, at most ${m.rssHighestAtThirdMiB} MiB after a third, ` +
    `${m.rssHighestMiB} MiB after all (bound per subscriber: 8 MiB); ${m.cutOff ? "cut off with ConsumerTooSlow" : `closed with ${m.closeCode}, not cut off with ConsumerTooSlow`} (${m.seconds} s); ` +
    describeReplays(result.replays)
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { engine: { type: "string", default: "sqlite" }, only: { type: "string" } } });
  if (values.only !== undefined && values.only !== "replay") throw new Error(`--only takes replay (got ${values.only})`);
  const measure = (options: { postgres?: BenchPostgres }) =>
    values.only ? measureReplays(options).then(describeReplays) : measureFirehose(options).then(describeFirehose);
  await forEachEngine(values.engine, async (engine, postgres) => console.log(`${engineName(engine)}: ${await measure({ postgres })}`), { plc: false });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
