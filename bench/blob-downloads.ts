/**
 * What blobs cost the server (docs/decisions/0043): memory held by downloads whose clients do not read, the time and
 * server CPU of a download read whole and of an upload. `npm run build`, then
 * `node --import tsx bench/blob-downloads.ts [--engine sqlite|postgresql] [--size-mib 5] [--clients 64]`.
 *
 * Held memory is measured from outside the server (/proc): its resident set before and once the stalled downloads
 * have settled, and what it read of the blob minus what the kernel queues hold for those connections (what it read
 * and still holds itself), with the bytes it reads per blob byte calibrated by one download read whole (PostgreSQL
 * sends bytea as hexadecimal text: about two). It measures whatever build is in build/, so the same script gives the
 * figure before and after a change. A benchmark reports; it never fails on a figure.
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { startPlcDirectory } from "../scripts/lib/plc-directory.ts";
import { bytesInKernel, bytesRead, residentBytes, stalledDownloads, until, untilSteady } from "../tests/helpers/stalled-downloads.ts";
import { clockTicksPerSecond } from "./lib/cpu.ts";
import { Driver } from "./lib/driver.ts";
import { startBenchPostgres, type BenchPostgres } from "./lib/postgres.ts";
import { startServer, type BenchServer } from "./lib/server.ts";
import { median, round } from "./lib/stats.ts";

const { values } = parseArgs({
  options: { engine: { type: "string", default: "sqlite" }, "size-mib": { type: "string", default: "5" }, clients: { type: "string", default: "64" }, rounds: { type: "string", default: "10" } },
});
const size = Number(values["size-mib"]) * 1024 * 1024;
const clients = Number(values.clients);
const rounds = Number(values.rounds);
const MIB = 1024 * 1024;
const ticksPerMs = clockTicksPerSecond() / 1000;

const plc = await startPlcDirectory();
process.env.ATRIUM_PLC_DIRECTORY_URL = plc.url;
let postgres: BenchPostgres | undefined;
let server: BenchServer | undefined;
try {
  let databaseUrl: string | undefined;
  if (values.engine === "postgresql") {
    postgres = await startBenchPostgres();
    databaseUrl = await postgres.createDatabase("blobs");
  }
  server = await startServer({ databaseUrl, env: { ATRIUM_BLOB_MAX_BYTES: String(Math.max(size, 5 * MIB)), ATRIUM_BLOB_QUOTA_BYTES: String(2 ** 40) } });
  const driver = await Driver.create(server);
  const { access_token: token } = await driver.obtainTokens();

  /** An authenticated request with a fresh proof, retried once for a new nonce. */
  const authenticated = async (method: string, path: string, init: { body?: BodyInit; headers?: Record<string, string> } = {}) => {
    const url = driver.url(path);
    for (let attempt = 0; ; attempt++) {
      const response = await fetch(url, { method, body: init.body, headers: { ...init.headers, Authorization: `DPoP ${token}`, DPoP: await driver.proof(method, url, token) } });
      const text = await response.text();
      const result = { status: response.status, headers: response.headers, body: text ? (JSON.parse(text) as unknown) : undefined };
      if (driver.observe(result) && attempt < 2) continue;
      if (response.status !== 200) throw new Error(`${method} ${path}: ${response.status} ${text}`);
      return result.body as Record<string, unknown>;
    }
  };
  const cpuMs = (work: () => Promise<unknown>) => async () => {
    const ticks = server!.cpuTicks();
    const started = performance.now();
    await work();
    return { ms: performance.now() - started, cpuMs: (server!.cpuTicks() - ticks) / ticksPerMs };
  };

  // Uploads of distinct blobs of the size, one after another.
  const uploads = [];
  let blob: Record<string, unknown> | undefined;
  for (let i = 0; i < rounds; i++) {
    const bytes = randomBytes(size);
    uploads.push(
      await cpuMs(async () => {
        blob = (await authenticated("POST", "/xrpc/com.atproto.repo.uploadBlob", { body: bytes, headers: { "Content-Type": "video/mp4" } })).blob as Record<string, unknown>;
      })(),
    );
  }
  await authenticated("POST", "/xrpc/com.atproto.repo.createRecord", {
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ repo: driver.did, collection: "app.bsky.feed.post", record: { $type: "app.bsky.feed.post", text: "blob", createdAt: new Date().toISOString(), embed: { $type: "app.bsky.embed.images", images: [{ alt: "", image: blob }] } } }),
  });
  const cid = (blob!.ref as { $link: string }).$link;
  const path = `/xrpc/com.atproto.sync.getBlob?${new URLSearchParams({ did: driver.did, cid })}`;

  // Downloads read whole, one after another; the first also calibrates what the server reads per blob byte.
  const downloads = [];
  let readPerByte = 0;
  for (let i = 0; i < rounds; i++) {
    const before = bytesRead(server.pid);
    downloads.push(
      await cpuMs(async () => {
        const body = await (await fetch(driver.url(path))).arrayBuffer();
        if (body.byteLength !== size) throw new Error(`downloaded ${body.byteLength} of ${size} bytes`);
      })(),
    );
    if (i === 0) readPerByte = (bytesRead(server.pid) - before) / size;
  }

  // Downloads whose clients read nothing.
  const port = Number(new URL(server.issuer).port);
  const residentBefore = residentBytes(server.pid);
  const readBefore = bytesRead(server.pid);
  const stalled = await stalledDownloads(port, path, clients);
  const ports = stalled.map((client) => client.port);
  await until(() => bytesInKernel(port, ports) > 0);
  await untilSteady(() => bytesRead(server!.pid));
  await untilSteady(() => residentBytes(server!.pid), { stable: 5 });
  const read = (bytesRead(server.pid) - readBefore) / readPerByte;
  const inKernel = bytesInKernel(port, ports);
  const resident = residentBytes(server.pid) - residentBefore;
  for (const client of stalled) client.socket.destroy();

  const middle = (numbers: number[]) => round(median([...numbers].sort((a, b) => a - b)), 1);
  const summary = (runs: Array<{ ms: number; cpuMs: number }>) => ({ medianMs: middle(runs.map((run) => run.ms)), serverCpuMs: middle(runs.map((run) => run.cpuMs)) });
  console.log(
    JSON.stringify(
      {
        engine: values.engine,
        blobMiB: size / MIB,
        upload: summary(uploads),
        download: summary(downloads),
        stalledDownloads: {
          clients,
          readPerBlobByte: round(readPerByte, 3),
          blobReadMiB: round(read / MIB, 1),
          inKernelMiB: round(inKernel / MIB, 1),
          heldByServerKiBPerDownload: round((read - inKernel) / clients / 1024, 1),
          residentGrowthMiB: round(resident / MIB, 1),
        },
      },
      null,
      2,
    ),
  );
} finally {
  await server?.stop();
  await postgres?.stop();
  await plc.stop();
}
