/**
 * What stalled getRepo exports cost the server (issue 28 item 1; docs/decisions/0042): a repository of about 50 MB is
 * made through the server, then STALLED clients each ask for it with com.atproto.sync.getRepo and never read a byte,
 * and the server's resident memory (VmRSS of its process, read from /proc) is reported before they connect and once
 * it has stopped growing. Measured from outside the process, so that it counts everything an export holds: the
 * blocks read from the database, Node's stream buffers, SQLite's page cache, the garbage not yet collected.
 * `npx tsx bench/repo-export-memory.ts [--engine sqlite|postgresql|both] [--records N] [--stalled N]` after
 * `npm run build`.
 */
import { readFileSync } from "node:fs";
import net from "node:net";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { Driver, send } from "./lib/driver.ts";
import { forEachEngine } from "./lib/engines.ts";
import type { BenchPostgres } from "./lib/postgres.ts";
import { startServer, type BenchServer } from "./lib/server.ts";
import { round } from "./lib/stats.ts";

/** 25,000 records of about 2 KB: some 52 MB of blocks with the MST. */
const RECORDS = 25_000;
const RECORD_TEXT_BYTES = 2_000;
const FILL_BATCH = 200;
const STALLED = 20;
const COLLECTION = "com.example.bench.note";
/** The resident memory counts as settled once it has grown by less than this over SETTLE_MS. */
const SETTLED_GROWTH_BYTES = 2 * 1024 * 1024;
const SETTLE_MS = 3_000;
const SETTLE_LIMIT_MS = 120_000;

export type ExportMemoryResult = {
  engine: "sqlite" | "postgresql";
  records: number;
  carBytes: number;
  stalled: number;
  /** Exports the server admitted (200) and refused (429), and any other answer's status. */
  admitted: number;
  refused: number;
  other: number[];
  rssBeforeMiB: number;
  rssStalledMiB: number;
  /** VmHWM: the process's highest resident memory so far. */
  rssPeakMiB: number;
};

const mib = (bytes: number) => round(bytes / 1024 / 1024, 1);

function status(pid: number, field: "VmRSS" | "VmHWM"): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((text) => text.startsWith(`${field}:`))!;
  return Number(/(\d+)/.exec(line)![1]) * 1024;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function fill(driver: Driver, records: number): Promise<void> {
  const { access_token: token } = await driver.obtainTokens();
  const url = driver.url("/xrpc/com.atproto.repo.applyWrites");
  const filler = "x".repeat(RECORD_TEXT_BYTES);
  for (let start = 0; start < records; start += FILL_BATCH) {
    const writes = Array.from({ length: Math.min(FILL_BATCH, records - start) }, (_, i) => ({
      $type: "com.atproto.repo.applyWrites#create",
      collection: COLLECTION,
      rkey: `3kmem${String(start + i).padStart(7, "0")}`,
      value: { $type: COLLECTION, text: `${start + i} ${filler}`, createdAt: "2026-11-28T00:00:00.000Z" },
    }));
    for (let attempt = 0; ; attempt++) {
      const headers = { Authorization: `DPoP ${token}`, DPoP: await driver.proof("POST", url, token), "Content-Type": "application/json" };
      const result = await send(url, { method: "POST", headers, body: JSON.stringify({ repo: driver.did, writes }) });
      if (driver.observe(result) && attempt < 3) continue;
      if (result.status !== 200) throw new Error(`applyWrites: ${result.status} ${JSON.stringify(result.body)}`);
      break;
    }
  }
}

/** A client that sends the request and never reads: what it got is only what the kernel took for it. */
function stalledClient(server: BenchServer, path: string): Promise<{ socket: net.Socket; status: number }> {
  const { hostname, port } = new URL(server.issuer);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname === "localhost" ? "127.0.0.1" : hostname, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${new URL(server.issuer).host}\r\n\r\n`);
    });
    socket.once("data", (chunk: Buffer) => {
      socket.pause();
      resolve({ socket, status: Number(/^HTTP\/1\.1 (\d+)/.exec(chunk.toString("latin1"))?.[1] ?? 0) });
    });
    socket.once("error", reject);
  });
}

/** The whole CAR once, read to its end: its size. */
async function carSize(server: BenchServer, did: string): Promise<number> {
  const response = await fetch(`${server.issuer}/xrpc/com.atproto.sync.getRepo?did=${encodeURIComponent(did)}`);
  if (response.status !== 200) throw new Error(`getRepo: ${response.status}`);
  return (await response.arrayBuffer()).byteLength;
}

/** Waits until the resident memory stops growing (SETTLED_GROWTH_BYTES over SETTLE_MS); its value then. */
async function settledRss(pid: number): Promise<number> {
  const deadline = performance.now() + SETTLE_LIMIT_MS;
  let last = status(pid, "VmRSS");
  for (;;) {
    await pause(SETTLE_MS);
    const now = status(pid, "VmRSS");
    if (now - last < SETTLED_GROWTH_BYTES || performance.now() > deadline) return now;
    last = now;
  }
}

export async function measureExportMemory(options: { postgres?: BenchPostgres; records?: number; stalled?: number } = {}): Promise<ExportMemoryResult> {
  const records = options.records ?? RECORDS;
  const stalled = options.stalled ?? STALLED;
  const databaseUrl = options.postgres ? await options.postgres.createDatabase(`atrium_export_memory_${Date.now()}`) : undefined;
  // Every stalled export admitted (docs/decisions/0042's caps would refuse most of them from one address): the figure
  // is what each one holds. A server without these settings ignores them.
  const server = await startServer({ databaseUrl, env: { ATRIUM_REPO_EXPORTS_PER_ADDRESS: String(stalled), ATRIUM_REPO_EXPORTS_MAX: String(stalled) } });
  try {
    const driver = await Driver.create(server);
    await fill(driver, records);
    const carBytes = await carSize(server, driver.did);
    await pause(SETTLE_MS);
    const rssBefore = status(server.pid, "VmRSS");
    const path = `/xrpc/com.atproto.sync.getRepo?did=${encodeURIComponent(driver.did)}`;
    const clients = await Promise.all(Array.from({ length: stalled }, () => stalledClient(server, path)));
    const rssStalled = await settledRss(server.pid);
    const result: ExportMemoryResult = {
      engine: options.postgres ? "postgresql" : "sqlite",
      records,
      carBytes,
      stalled,
      admitted: clients.filter((client) => client.status === 200).length,
      refused: clients.filter((client) => client.status === 429).length,
      other: clients.map((client) => client.status).filter((status) => status !== 200 && status !== 429),
      rssBeforeMiB: mib(rssBefore),
      rssStalledMiB: mib(rssStalled),
      rssPeakMiB: mib(status(server.pid, "VmHWM")),
    };
    for (const client of clients) client.socket.destroy();
    // What the server said of any other answer (a 500 is logged with its error).
    if (result.other.length > 0) console.log(server.output().split("\n").filter((line) => /"level":(50|40)/.test(line)).join("\n"));
    return result;
  } finally {
    await server.stop();
  }
}

export function describeExportMemory(r: ExportMemoryResult): string {
  return (
    `${r.engine}: ${r.records} records, a CAR of ${mib(r.carBytes)} MiB; ${r.stalled} clients that never read (${r.admitted} admitted, ${r.refused} refused${r.other.length > 0 ? `, other answers: ${r.other.join(", ")}` : ""}): ` +
    `server RSS ${r.rssBeforeMiB} MiB before, ${r.rssStalledMiB} MiB with them (+${round(r.rssStalledMiB - r.rssBeforeMiB, 1)} MiB), peak ${r.rssPeakMiB} MiB`
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { engine: { type: "string", default: "sqlite" }, records: { type: "string" }, stalled: { type: "string" } } });
  const records = values.records === undefined ? undefined : Number(values.records);
  const stalled = values.stalled === undefined ? undefined : Number(values.stalled);
  await forEachEngine(values.engine, async (_engine, postgres) => console.log(describeExportMemory(await measureExportMemory({ postgres, records, stalled }))), { plc: true });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
